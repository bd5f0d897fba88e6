# A pkgutil-style namespace package: an image's own smdistributed distribution (for example
# smdistributed.dataparallel in an AWS image) stays importable next to this one.
__path__ = __import__("pkgutil").extend_path(__path__, __name__)
