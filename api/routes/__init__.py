"""One router per surface."""
