"""The standby controller: replication of records and namespaces into it, and its status (docs/FAILOVER.md)."""
