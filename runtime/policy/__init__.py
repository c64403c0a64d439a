"""Pure policy code: no I/O at import, used by workflows and tests alike."""
