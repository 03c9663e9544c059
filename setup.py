"""Builds the compiled scanner.  Metadata lives in pyproject.toml.

FASTSSE_NO_EXTENSIONS=1 at build time skips the extension (the pure-Python twin then runs).
"""

import os

from setuptools import Extension, setup

if os.environ.get("FASTSSE_NO_EXTENSIONS"):
    ext_modules = []
else:
    from Cython.Build import cythonize

    ext_modules = cythonize(
        [
            Extension(
                "fastsse._scanner",
                ["fastsse/_scanner.pyx"],
                # the layers it cimports (fastsse/*.pxd) compile into it; Cython tracks them
                depends=["fastsse/_simd.h", "fastsse/_eventstream.h", "fastsse/_replay.h"],
                include_dirs=["fastsse"],
                extra_compile_args=["-O3", "--param=max-inline-insns-single=1000"],
            )
        ],
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    )

setup(ext_modules=ext_modules)
