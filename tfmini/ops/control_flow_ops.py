"""Public ops of one family: see ops/__init__.py for __all__/_NAMESPACES."""

__all__ = []
_NAMESPACES = {}
