# src/conf: sources of this module, added to the convenience library.
