"""Runs untrusted submissions: sandbox, limits, the child harness, the wire protocol."""
