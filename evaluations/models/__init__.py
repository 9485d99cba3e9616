"""Model plumbing shared by QA and judges: embedded model files, the on-disk call cache, retries."""
