"""kiln.distributed.algorithms: torch.distributed.algorithms' communication hooks for DDP."""
