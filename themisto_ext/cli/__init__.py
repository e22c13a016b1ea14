"""The ``themisto`` command line: a thin layer over the package's modules."""
