"""tf.train.Example and its parts: the protocol-buffer classes of
TensorFlow's own schema (tensorflow/core/example/{feature,example}.proto),
built here from that schema with the protobuf package, so the bytes are
TF's: TF parses what tfmini serializes and the reverse.

The descriptors live in a private pool: a process that also imports
TensorFlow (whose pool holds the same names) must not collide."""
from google.protobuf import descriptor_pb2, descriptor_pool

try:
    from google.protobuf.message_factory import GetMessageClass
except ImportError:  # protobuf < 4.21
    from google.protobuf import message_factory as _mf

    def GetMessageClass(desc):
        return _mf.MessageFactory().GetPrototype(desc)

_F = descriptor_pb2.FieldDescriptorProto


def _field(msg, name, number, ftype, label=_F.LABEL_OPTIONAL,
           type_name=None, packed=None, oneof=None):
    f = msg.field.add(name=name, number=number, type=ftype, label=label)
    if type_name:
        f.type_name = type_name
    if packed is not None:
        f.options.packed = packed
    if oneof is not None:
        f.oneof_index = oneof
    return f


def _map_entry(msg, entry_name, value_type):
    e = msg.nested_type.add(name=entry_name)
    e.options.map_entry = True
    _field(e, "key", 1, _F.TYPE_STRING)
    _field(e, "value", 2, _F.TYPE_MESSAGE, type_name=value_type)
    return e


def _schema():
    rep = _F.LABEL_REPEATED
    feat = descriptor_pb2.FileDescriptorProto(
        name="tensorflow/core/example/feature.proto", package="tensorflow",
        syntax="proto3")
    _field(feat.message_type.add(name="BytesList"), "value", 1,
           _F.TYPE_BYTES, rep)
    _field(feat.message_type.add(name="FloatList"), "value", 1,
           _F.TYPE_FLOAT, rep, packed=True)
    _field(feat.message_type.add(name="Int64List"), "value", 1,
           _F.TYPE_INT64, rep, packed=True)
    m = feat.message_type.add(name="Feature")
    m.oneof_decl.add(name="kind")
    _field(m, "bytes_list", 1, _F.TYPE_MESSAGE,
           type_name=".tensorflow.BytesList", oneof=0)
    _field(m, "float_list", 2, _F.TYPE_MESSAGE,
           type_name=".tensorflow.FloatList", oneof=0)
    _field(m, "int64_list", 3, _F.TYPE_MESSAGE,
           type_name=".tensorflow.Int64List", oneof=0)
    m = feat.message_type.add(name="Features")
    _map_entry(m, "FeatureEntry", ".tensorflow.Feature")
    _field(m, "feature", 1, _F.TYPE_MESSAGE, rep,
           type_name=".tensorflow.Features.FeatureEntry")
    m = feat.message_type.add(name="FeatureList")
    _field(m, "feature", 1, _F.TYPE_MESSAGE, rep,
           type_name=".tensorflow.Feature")
    m = feat.message_type.add(name="FeatureLists")
    _map_entry(m, "FeatureListEntry", ".tensorflow.FeatureList")
    _field(m, "feature_list", 1, _F.TYPE_MESSAGE, rep,
           type_name=".tensorflow.FeatureLists.FeatureListEntry")

    ex = descriptor_pb2.FileDescriptorProto(
        name="tensorflow/core/example/example.proto", package="tensorflow",
        syntax="proto3", dependency=[feat.name])
    _field(ex.message_type.add(name="Example"), "features", 1,
           _F.TYPE_MESSAGE, type_name=".tensorflow.Features")
    m = ex.message_type.add(name="SequenceExample")
    _field(m, "context", 1, _F.TYPE_MESSAGE, type_name=".tensorflow.Features")
    _field(m, "feature_lists", 2, _F.TYPE_MESSAGE,
           type_name=".tensorflow.FeatureLists")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(feat)
    pool.Add(ex)
    return pool


_pool = _schema()


def _cls(name):
    return GetMessageClass(_pool.FindMessageTypeByName("tensorflow." + name))


BytesList = _cls("BytesList")
FloatList = _cls("FloatList")
Int64List = _cls("Int64List")
Feature = _cls("Feature")
Features = _cls("Features")
FeatureList = _cls("FeatureList")
FeatureLists = _cls("FeatureLists")
Example = _cls("Example")
SequenceExample = _cls("SequenceExample")

__all__ = ["BytesList", "FloatList", "Int64List", "Feature", "Features",
           "FeatureList", "FeatureLists", "Example", "SequenceExample"]
