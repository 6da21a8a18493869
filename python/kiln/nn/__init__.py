"""kiln.nn: Module, Parameter, the layers, functional, init and utils, as torch.nn."""

from kiln.nn.parameter import Parameter
from kiln.nn.modules import *  # noqa: F401,F403
from kiln.nn.modules import __all__ as _modules_all
from kiln.nn import functional, init, utils
from kiln.nn.modules.transformer import generate_square_subsequent_mask as _square_mask


class Transformer:
    """Only torch.nn.Transformer's static mask helper, which model code calls on the
    class; the full encoder-decoder module is not written yet."""

    generate_square_subsequent_mask = staticmethod(_square_mask)

    def __init__(self, *args, **kwargs) -> None:
        raise NotImplementedError("kiln.nn.Transformer (the encoder-decoder module) is not implemented yet; "
                                  "TransformerEncoderLayer and TransformerEncoder are")


__all__ = ["Parameter", "functional", "init", "utils", "Transformer", *_modules_all]
