"""The workspace's files: content hashes and atomic writes, shared by tools and file routes."""
