"""Byte formats that client and cloud must agree on: erasure-coded block framing and coding."""
