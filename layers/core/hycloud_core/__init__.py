"""HyCloud core library: every format and algorithm that client and cloud must agree on."""

__version__ = "0.1.0"
