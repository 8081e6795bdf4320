# src/hash: sources of this module, added to the convenience library.
