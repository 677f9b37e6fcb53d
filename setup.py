"""The compiled part of spamnb, all of it optional.

- spamnb/text/_ctokens.c: the tokeniser's word scanner and tag cutter, in C.
- The tokeniser, the MIME reader, the header rules and Platt's fit (COMPILED), compiled by
  Cython from their own Python source as it is (a .pxd beside one gives its loops C
  types, or its helpers direct calls): one source, run interpreted where nothing was built (or with SPAMNB_PURE set,
  see spamnb.compiled) and compiled otherwise.

Everything else is declared in pyproject.toml (Cython is a build dependency there).
Where an extension cannot be built (no compiler, no Python headers, no Cython) the
install goes on and spamnb runs those modules' Python source, which gives the same
results (bench/tokens_identical.py, tests/test_compiled.py, `make fuzz`).
"""
from setuptools import Extension, setup

COMPILED = ("spamnb/text/tokens.py", "spamnb/mail/message.py", "spamnb/mail/headers.py", "spamnb/models/calibration.py")
# Python's semantics kept whole: annotations are not C types (`bytes` would refuse a
# bytearray), and no C integer arithmetic is assumed.
DIRECTIVES = {"language_level": 3, "annotation_typing": False}
# Floating point as Python computes it: no multiply and add fused into one rounding, so
# that the calibration's compiled fit is its source's to the bit.
FLAGS = ["-O2", "-ffp-contract=off"]


def extensions() -> list[Extension]:
    scanner = Extension("spamnb.text._ctokens", ["spamnb/text/_ctokens.c"], optional=True, extra_compile_args=["-O2"])
    try:
        from Cython.Build import cythonize
    except ImportError:  # built without the declared build dependencies: the modules stay interpreted
        return [scanner]
    modules = [Extension(path[: -len(".py")].replace("/", "."), [path], optional=True, extra_compile_args=FLAGS) for path in COMPILED]
    # The generated C goes to build/, out of the source tree.
    return [scanner, *cythonize(modules, compiler_directives=DIRECTIVES, build_dir="build/cython", quiet=True)]


setup(ext_modules=extensions())
