"""spamnb: a naive Bayes spam filter for the command line."""

import os

__version__ = "0.1.0"

# Before any compiled module is imported: SPAMNB_PURE runs their Python source (spamnb.compiled).
if os.environ.get("SPAMNB_PURE"):
    from spamnb import compiled

    compiled.run_source_if_asked()
