"""tf.TensorShape: a shape whose dims may be unknown (None)."""
import operator


class Dimension:
    """One dim of a TensorShape as TensorShape.dims gives it (TF2 still
    does): `.value` an int or None. An unknown dim makes comparisons
    None and arithmetic Dimension(None), as in TF; like TF's it is
    unhashable (it defines == over unknowns)."""

    __slots__ = ("_value",)

    def __init__(self, value):
        if isinstance(value, Dimension):
            value = value.value
        if value is not None:
            try:
                value = value.__index__()
            except AttributeError:
                raise TypeError(
                    f"Dimension value must be integer or None or have an "
                    f"__index__ method, got value '{value!r}' with type "
                    f"'{type(value)}'") from None
            if value < 0:
                raise ValueError(f"Dimension {value} must be >= 0")
        self._value = value

    @property
    def value(self):
        return self._value

    def __repr__(self):
        return f"Dimension({self._value!r})"

    def __str__(self):
        return "?" if self._value is None else str(self._value)

    def __int__(self):
        return self._value

    def __index__(self):
        return self._value

    __hash__ = None

    def _compare(self, other, op):
        """op over both values; None where either is unknown, and
        NotImplemented for what is no dimension (TF's as_dimension)."""
        try:
            other = Dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other.value is None:
            return None
        return op(self._value, other.value)

    def __eq__(self, other):
        return self._compare(other, operator.eq)

    def __ne__(self, other):
        return self._compare(other, operator.ne)

    def __lt__(self, other):
        return self._compare(other, operator.lt)

    def __le__(self, other):
        return self._compare(other, operator.le)

    def __gt__(self, other):
        return self._compare(other, operator.gt)

    def __ge__(self, other):
        return self._compare(other, operator.ge)

    def _arith(self, other, fn):
        other = Dimension(other)
        if self._value is None or other.value is None:
            return Dimension(None)
        return Dimension(fn(self._value, other.value))

    def __add__(self, other):
        return self._arith(other, operator.add)

    def __sub__(self, other):
        return self._arith(other, operator.sub)

    def __mul__(self, other):
        return self._arith(other, operator.mul)

    def __floordiv__(self, other):
        return self._arith(other, operator.floordiv)

    def __mod__(self, other):
        return self._arith(other, operator.mod)

    def __radd__(self, other):
        return Dimension(other) + self

    def __rsub__(self, other):
        return Dimension(other) - self

    def __rmul__(self, other):
        return Dimension(other) * self

    def __rfloordiv__(self, other):
        return Dimension(other) // self

    def __rmod__(self, other):
        return Dimension(other) % self

    def is_compatible_with(self, other):
        other = Dimension(other)
        return (self._value is None or other.value is None
                or self._value == other.value)

    def assert_is_compatible_with(self, other):
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {Dimension(other)} "
                             f"are not compatible")

    def merge_with(self, other):
        other = Dimension(other)
        self.assert_is_compatible_with(other)
        return Dimension(other.value if self._value is None
                         else self._value)


def _dim_value(d):
    return d.value if isinstance(d, Dimension) else d


class TensorShape:
    __slots__ = ("_dims",)

    def __init__(self, dims):
        if dims is None:
            self._dims = None
        elif isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif isinstance(dims, int):
            # As TF: a bare int is a rank-1 shape.
            self._dims = (int(dims),)
        else:
            self._dims = tuple(None if _dim_value(d) is None else int(d)
                               for d in dims)

    @property
    def rank(self):
        return None if self._dims is None else len(self._dims)

    @property
    def ndims(self):
        return self.rank

    @property
    def dims(self):
        """The dims as Dimension objects (TF's; shape[i] and as_list()
        give ints)."""
        return None if self._dims is None else [Dimension(d)
                                                 for d in self._dims]

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown "
                             "TensorShape.")
        return list(self._dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_fully_defined(self):
        return self._dims is not None and None not in self._dims

    def is_compatible_with(self, other):
        other = TensorShape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b
                   for a, b in zip(self._dims, other._dims))

    def merge_with(self, other):
        other = TensorShape(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        return TensorShape([a if a is not None else b
                            for a, b in zip(self._dims, other._dims)])

    def most_specific_compatible_shape(self, other):
        other = TensorShape(other)
        if (self._dims is None or other._dims is None
                or len(self._dims) != len(other._dims)):
            return TensorShape(None)
        return TensorShape([a if a == b else None
                            for a, b in zip(self._dims, other._dims)])

    # ---- rank and compatibility checks (ValueError, as TF) -----------
    def assert_is_compatible_with(self, other):
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {TensorShape(other)} are "
                             "incompatible")

    def assert_is_fully_defined(self):
        if not self.is_fully_defined():
            raise ValueError(f"Shape {self} is not fully defined")

    def assert_same_rank(self, other):
        other = TensorShape(other)
        if (self.rank is not None and other.rank is not None
                and self.rank != other.rank):
            raise ValueError(f"Shapes {self} and {other} must have the same "
                             "rank")

    def assert_has_rank(self, rank):
        if self.rank not in (None, rank):
            raise ValueError(f"Shape {self} must have rank {rank}")

    def with_rank(self, rank):
        self.assert_has_rank(rank)
        return self if self._dims is not None else TensorShape([None] * rank)

    def with_rank_at_least(self, rank):
        if self.rank is not None and self.rank < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def with_rank_at_most(self, rank):
        if self.rank is not None and self.rank > rank:
            raise ValueError(f"Shape {self} must have rank at most {rank}")
        return self

    def concatenate(self, other):
        other = TensorShape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def __add__(self, other):
        return self.concatenate(other)

    def __radd__(self, other):
        return TensorShape(other).concatenate(self)

    def __len__(self):
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown "
                             "rank.")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown "
                             "rank.")
        return iter(self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            return None if not isinstance(key, slice) else TensorShape(None)
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return self._dims[key]

    def __eq__(self, other):
        if isinstance(other, TensorShape):
            return self._dims == other._dims
        if isinstance(other, (tuple, list)):
            return self._dims is not None and self._dims == tuple(other)
        return NotImplemented

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return hash(self._dims)

    def __bool__(self):
        return self._dims is not None

    def __repr__(self):
        if self._dims is None:
            return "TensorShape(None)"
        return f"TensorShape({list(self._dims)})"

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        if len(self._dims) == 1:
            return f"({self._dims[0]},)"
        return "(" + ", ".join(str(d) for d in self._dims) + ")"

    def __array__(self, dtype=None, copy=None):
        # What lets ops take a shape where they take a tensor
        # (tf.reduce_prod(x.shape)), as TF's conversion does: int32, or
        # int64 when a dim does not fit. NumPy's own sequence conversion
        # would accept unknown dims as None.
        import numpy as np
        if not self.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known "
                             f"TensorShape {self} to a Tensor.")
        big = any(d >= 2**31 for d in self._dims)
        a = np.array(self._dims, np.int64 if big else np.int32)
        return a if dtype is None else a.astype(dtype)

    def __reduce__(self):
        return TensorShape, (self._dims,)
