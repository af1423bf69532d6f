"""The class names TF's datasets show in their repr: `<_MapDataset
element_spec=TensorSpec(...)>`. tfmini has one Dataset class; each
source and transformation below tags what it returns with the name TF's
class for it has, and Dataset.__repr__ prints it (a dataset made any
other way, such as a window's sub-datasets, is TF's _VariantDataset)."""
import functools

_PLAIN = {
    "from_tensor_slices": "_TensorSliceDataset",
    "from_tensors": "_TensorDataset", "range": "_RangeDataset",
    "from_generator": "_FlatMapDataset", "zip": "_ZipDataset",
    "enumerate": "_ZipDataset", "batch": "_BatchDataset",
    "ragged_batch": "_BatchDataset", "padded_batch": "_PaddedBatchDataset",
    "unbatch": "_UnbatchDataset", "filter": "_FilterDataset",
    "repeat": "_RepeatDataset", "take": "_TakeDataset",
    "skip": "_SkipDataset", "shuffle": "_ShuffleDataset",
    "prefetch": "_PrefetchDataset", "flat_map": "_FlatMapDataset",
    "concatenate": "_ConcatenateDataset", "cache": "CacheDataset",
    "window": "_WindowDataset", "shard": "_ShardDataset",
    "take_while": "_TakeWhileDataset", "scan": "_ScanDataset",
    "unique": "_UniqueDataset", "ignore_errors": "_IgnoreErrorsDataset",
    "rebatch": "_RebatchDataset", "group_by_window": "_GroupByWindowDataset",
    "bucket_by_sequence_length": "_GroupByWindowDataset",
    "with_options": "_OptionsDataset",
    "sample_from_datasets": "_DirectedInterleaveDataset",
    "choose_from_datasets": "_DirectedInterleaveDataset",
}
# These two are parallel variants when num_parallel_calls is given.
_PARALLEL = {"map": ("_MapDataset", "_ParallelMapDataset"),
             "interleave": ("_InterleaveDataset",
                            "_ParallelInterleaveDataset")}


# Transformations whose elements are their source's: their element_spec
# is the source's, found without reading (a repr of ds.shuffle(60000)
# must not fill the buffer).
_SAME_ELEMENTS = {"shuffle", "repeat", "take", "skip", "prefetch", "cache",
                  "filter", "shard", "take_while", "ignore_errors",
                  "unique", "with_options"}


def _tagging(fn, name, parallel=None, same=False):
    @functools.wraps(fn)
    def f(*args, **kwargs):
        out = fn(*args, **kwargs)
        if same and args and out is not args[0] and \
                getattr(out, "_spec", None) is None:
            try:
                out._spec_from = args[0]
            except AttributeError:
                pass
        tag = name
        if parallel is not None and \
                kwargs.get("num_parallel_calls") is not None:
            tag = parallel
        try:
            out._tf_class = tag
        except AttributeError:
            pass
        return out
    return f


def tag_methods(cls):
    """Wraps cls's sources and transformations (those it has)."""
    for attr, name in list(_PLAIN.items()) + [
            (a, p) for a, p in _PARALLEL.items()]:
        raw = cls.__dict__.get(attr)
        if raw is None:
            raw = next((c.__dict__[attr] for c in cls.__mro__
                        if attr in c.__dict__), None)
        if raw is None:
            continue
        plain, parallel = (name, None) if isinstance(name, str) else name
        if isinstance(raw, staticmethod):
            setattr(cls, attr, staticmethod(_tagging(raw.__func__, plain,
                                                     parallel)))
        else:
            setattr(cls, attr, _tagging(raw, plain, parallel,
                                        attr in _SAME_ELEMENTS))


def dataset_repr(ds):
    try:
        spec = repr(ds.element_spec)
    except Exception:  # noqa: BLE001 - a repr must not raise
        spec = "<unknown>"
    return f"<{getattr(ds, '_tf_class', type(ds)._tf_default)} " \
           f"element_spec={spec}>"
