# Complete annotations (upper bound, and every test set): nothing is deleted.
deletion = None
