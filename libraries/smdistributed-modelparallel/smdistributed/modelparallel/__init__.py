# A pkgutil-style namespace package: an image's own smdistributed distribution (for example
# smdistributed.dataparallel in an AWS image) stays importable next to this one. Sageport mounts
# this copy on PYTHONPATH, which Python searches before site-packages, so this directory goes last
# in the package's path: an image that ships AWS's own smdistributed.modelparallel keeps using it.
_own = list(__path__)
__path__ = [path for path in __import__("pkgutil").extend_path(__path__, __name__) if path not in _own] + _own
