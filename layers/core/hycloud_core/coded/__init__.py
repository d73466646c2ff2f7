"""Erasure-coded files' jobs in the cloud: fetch and reassemble, rebuild a whole copy, repair,
migrate across a ring change, sweep unlinked blocks. Their layout is `codec/layout.py`."""
