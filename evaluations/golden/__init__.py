"""Golden code-span queries: questions about a repository's code whose answers are spans of that code.

``schema`` (the file format), ``validate`` (are the spans still there? ``--update`` keeps them current),
``cli`` (``evaluations golden validate`` / ``evaluations golden`` / ``evaluations run DATASET_FILE``).
"""
