"""Client-side encryption of folders (docs/ENCRYPTION.md): formats and algorithms only.

The cloud never imports this package: it stores what these modules produce as ordinary files.
Modules: keys (passphrase -> user key -> wrapped folder key -> subkeys), header (the folder's
`.hcenc`), chunking (content-defined boundaries), chunks (convergent chunk encryption), names
(deterministic name encryption), manifest (authenticated, versioned chunk lists and name maps).
"""
