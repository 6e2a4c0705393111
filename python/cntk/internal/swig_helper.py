"""cntk.internal.swig_helper: CNTK's native module returned plain wrapper objects that
`typemap` turned into the Python API classes. OpenCNTK's native objects already are those
classes, so `map_if_possible` has nothing to convert; both keep CNTK's names and calling
conventions for code that uses them."""
from functools import wraps


def map_if_possible(obj):
    """Converts native objects in `obj` (also inside tuples, lists, sets and dict keys
    and values) to their API classes, in place; OpenCNTK's already are."""
    if isinstance(obj, (tuple, list, set)):
        for item in obj:
            map_if_possible(item)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            map_if_possible(key)
            map_if_possible(value)


def typemap(f):
    """Decorator applying `map_if_possible` to what `f` returns."""
    @wraps(f)
    def wrapper(*args, **kwargs):
        result = f(*args, **kwargs)
        map_if_possible(result)
        return result
    return wrapper
