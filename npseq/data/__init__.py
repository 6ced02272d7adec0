"""Host-side data: text normalisation, ``Vocab``, truncate/pad with valid lengths, batches, corpora.

Everything here runs on the host and returns NumPy arrays (int64 token ids and
lengths); moving a batch to the GPU is the training loop's job.
"""
from .batching import BatchIterator
from .nmt import NMT_RESERVED_TOKENS, build_array_nmt, load_data_nmt, load_parallel_corpus, truncate_pad
from .text import preprocess_nmt, tokenize_nmt
from .vocab import UNK, Vocab

__all__ = ["BatchIterator", "NMT_RESERVED_TOKENS", "UNK", "Vocab", "build_array_nmt", "load_data_nmt",
           "load_parallel_corpus", "preprocess_nmt", "tokenize_nmt", "truncate_pad"]
