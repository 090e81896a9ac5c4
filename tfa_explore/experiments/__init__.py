"""Gin-configurable experiment loops: the run kit, one package per family."""
