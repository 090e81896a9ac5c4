"""Gin-configurable experiment loops and the runner the binaries share."""
