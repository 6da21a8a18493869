"""kiln.nn.modules: Module and the layers, one file per family as torch.nn.modules."""

from kiln.nn.modules.module import Module, register_module_forward_hook, register_module_forward_pre_hook
from kiln.nn.modules.container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from kiln.nn.modules.linear import Bilinear, Identity, Linear
from kiln.nn.modules.activation import (
    CELU, ELU, GELU, GLU, SELU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish,
    MultiheadAttention, ReLU, ReLU6, Sigmoid, SiLU, Softmax, Softmin, Softplus, Softsign, Tanh, Tanhshrink, Threshold,
    PReLU, Hardshrink, Softshrink, RReLU, Softmax2d,
)
from kiln.nn.modules.dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
from kiln.nn.modules.flatten import Flatten, Unflatten
from kiln.nn.modules.fold import Fold, Unfold
from kiln.nn.modules.sparse import Embedding, EmbeddingBag
from kiln.nn.modules.normalization import (
    BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LayerNorm,
    RMSNorm, LocalResponseNorm,
)
from kiln.nn.modules.padding import *  # noqa: F401,F403  (ConstantPad1d ... CircularPad3d)
from kiln.nn.modules.reshaping import (
    ChannelShuffle, CosineSimilarity, PairwiseDistance, PixelShuffle, PixelUnshuffle, Upsample, UpsamplingBilinear2d,
    UpsamplingNearest2d,
)
from kiln.nn.modules.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d
from kiln.nn.modules.pooling import (
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d,
    AvgPool1d, AvgPool2d, AvgPool3d, LPPool1d, LPPool2d, LPPool3d, MaxPool1d, MaxPool2d, MaxPool3d, MaxUnpool1d,
    MaxUnpool2d, MaxUnpool3d,
)
from kiln.nn.modules.loss import (
    BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss,
    CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss, MarginRankingLoss, MultiLabelSoftMarginLoss,
    MultiMarginLoss, PoissonNLLLoss, SoftMarginLoss, TripletMarginLoss, MultiLabelMarginLoss, CTCLoss, NLLLoss2d,
    TripletMarginWithDistanceLoss,
)
from kiln.nn.modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from kiln.nn.modules.transformer import (
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
)
from kiln.nn.modules.conv_transpose3d import ConvTranspose3d
from kiln.nn.modules.fractional_pool import FractionalMaxPool2d, FractionalMaxPool3d
from kiln.nn.modules.linear_cross_entropy import LinearCrossEntropyLoss, LinearCrossEntropyOptions
from kiln.nn.modules.adaptive import AdaptiveLogSoftmaxWithLoss
from kiln.nn.modules.cross_map_lrn import CrossMapLRN2d
from kiln.nn.modules.legacy_container import Container
from kiln.nn.modules.sync_batchnorm import SyncBatchNorm
from kiln.nn.modules.lazy_layers import (
    LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,
    LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear,
)
from kiln.nn.modules import lazy  # noqa: F401  (kiln.nn.modules.lazy.LazyModuleMixin, as torch)

__all__ = [name for name in dir() if name[0].isupper()] + [
    "register_module_forward_hook", "register_module_forward_pre_hook"]
