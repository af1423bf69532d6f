"""keras.layers."""
from .base import Layer  # noqa: F401
from .input_layer import Input, InputLayer, KerasTensor  # noqa: F401
from .core import (Activation, Add, Concatenate, Dense, Dropout,  # noqa
                   Embedding, Flatten, Lambda, LeakyReLU, ReLU, Reshape,
                   Softmax, add, concatenate)
from .conv import (AveragePooling2D, AvgPool2D, Conv2D,  # noqa: F401
                   GlobalAveragePooling2D, GlobalAvgPool2D,
                   GlobalMaxPool2D, GlobalMaxPooling2D, MaxPool2D,
                   MaxPooling2D)
from .normalization import BatchNormalization  # noqa: F401

Convolution2D = Conv2D
from .masking import Masking  # noqa: F401
from .rnn import (GRU, GRUCell, LSTM, LSTMCell, RNN,  # noqa: F401
                  Bidirectional, SimpleRNN, SimpleRNNCell)
from .attention import Attention, MultiHeadAttention  # noqa: F401
from .layer_normalization import (GroupNormalization,  # noqa: F401
                                  LayerNormalization, UnitNormalization)
from .conv_more import (AveragePooling1D, AvgPool1D, Conv1D,  # noqa: F401
                        Conv2DTranspose, Convolution1D,
                        Convolution2DTranspose, DepthwiseConv2D,
                        GlobalAveragePooling1D, GlobalAvgPool1D,
                        GlobalMaxPool1D, GlobalMaxPooling1D, MaxPool1D,
                        MaxPooling1D, SeparableConv2D,
                        SeparableConvolution2D)
from .reshaping import (Cropping2D, Permute, RepeatVector,  # noqa: F401
                        TimeDistributed, UpSampling2D, ZeroPadding2D)
from .merging import (Average, Dot, Maximum, Minimum,  # noqa: F401
                      Multiply, Subtract, average, dot, maximum, minimum,
                      multiply, subtract)
from .preprocessing import (CategoryEncoding,  # noqa: F401
                            Normalization, Rescaling)
from .index_lookup import IntegerLookup, StringLookup  # noqa: F401
from .hashing import Hashing  # noqa: F401
from .discretization import Discretization  # noqa: F401
from .text_vectorization import TextVectorization  # noqa: F401
