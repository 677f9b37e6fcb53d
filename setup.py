"""The compiled part of spamnb: the tokeniser's word scanner (spamnb/text/_ctokens.c).

Everything else is declared in pyproject.toml.  The extension is optional: where it
cannot be built (no compiler, no Python headers) the install goes on and spamnb uses
the pure-Python tokeniser, which gives the same tokens (see spamnb.text.tokens).
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("spamnb.text._ctokens", ["spamnb/text/_ctokens.c"], optional=True, extra_compile_args=["-O2"])])
