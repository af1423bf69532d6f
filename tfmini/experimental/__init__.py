"""tf.experimental: dlpack, numpy."""
from . import dlpack  # noqa: F401
from . import numpy  # noqa: F401
from ..ragged.dynamic_ragged_shape import (  # noqa: F401
    DynamicRaggedShape, RowPartition)
from ..extension_type import (  # noqa: F401,E402
    BatchableExtensionType, BatchableExtensionTypeSpec, ExtensionType,
    ExtensionTypeSpec)
from ..extension_dispatch import (  # noqa: F401,E402
    dispatch_for_api, dispatch_for_binary_elementwise_apis,
    dispatch_for_unary_elementwise_apis, unregister_dispatch_for)
from ..data.optional import Optional  # noqa: F401,E402
