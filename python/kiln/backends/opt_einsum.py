"""kiln.backends.opt_einsum, as torch.backends.opt_einsum: kiln.einsum does not
call the opt_einsum package, so it is reported unavailable and the flags are kept only."""

enabled = False
strategy = None


def is_available() -> bool:
    return False


def get_opt_einsum():
    return None
