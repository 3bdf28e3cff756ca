"""The KV cache of batched decoding (``ml.backends.TransformersPlanner``): appends in place, drops rows and
shared left padding.

transformers' ``DynamicLayer`` appends a token by concatenating it to the whole cache, so every decode step
copies every cached key and value once more (profiled on the shipped weights, 32 episodes at batch 32 on this
2-core CPU: 0.68 s of a 7.1 s rollout). ``BufferLayer`` keeps keys and values in a buffer allocated for the
prompt plus the turn's token budget and writes each new token into it; the model reads a view of the filled
part. It plugs into the model as a layer of a ``transformers.Cache`` (``BufferCache``), so the model's own
attention code reads it unchanged.
"""

from __future__ import annotations

import torch
from transformers import Cache
from transformers.cache_utils import DynamicLayer


class BufferLayer(DynamicLayer):
    """One attention layer's keys and values, (B, kv_heads, capacity, head_dim) buffers filled over
    positions ``start..end``; the caller sizes the capacity (prompt plus token budget)."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, end: int):
        super().__init__()
        self.buf_k, self.buf_v = keys, values
        self.start, self.end = 0, end
        self.dtype, self.device = keys.dtype, keys.device
        self.is_initialized = True
        self._view()

    def _view(self) -> None:
        self.keys = self.buf_k[:, :, self.start:self.end]
        self.values = self.buf_v[:, :, self.start:self.end]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        n = key_states.shape[-2]
        if self.end + n > self.buf_k.shape[-2]:
            raise RuntimeError(f"KV buffer full: {self.end} + {n} positions > capacity {self.buf_k.shape[-2]}")
        self.buf_k[:, :, self.end:self.end + n] = key_states
        self.buf_v[:, :, self.end:self.end + n] = value_states
        self.end += n
        self._view()
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self.buf_k, self.buf_v = self.buf_k[indices], self.buf_v[indices]
        self._view()

    def drop_front(self, n: int) -> None:
        """Forget the first ``n`` cached positions (left padding that no remaining row attends to)."""
        self.start += n
        self._view()


class BufferCache(Cache):
    """A cache over per-layer (keys, values) buffers whose first ``end`` positions are filled."""

    def __init__(self, buffers: list[tuple[torch.Tensor, torch.Tensor]], end: int):
        super().__init__(layers=[BufferLayer(k, v, end) for k, v in buffers])

    def drop_front(self, n: int) -> None:
        """Forget every layer's first ``n`` cached positions."""
        for layer in self.layers:
            layer.drop_front(n)
