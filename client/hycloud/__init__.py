"""HyCloud client: SDK and `hycloud` CLI."""
