"""A tenant's tokens: issued, hashed, checked."""
