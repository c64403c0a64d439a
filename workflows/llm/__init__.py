"""The fallback chain walked by a workflow, and what a failed chain tells the stream."""
