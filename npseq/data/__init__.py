"""Host-side data: text normalisation, ``Vocab``, truncate/pad with valid lengths, batches, corpora,
and a synthetic time series with autoregressive features.

Everything here runs on the host and returns NumPy arrays (int64 token ids and
lengths); moving a batch to the GPU is the training loop's job.
"""
from .batching import BatchIterator
from .captions import CaptionData, CaptionSplit, Scene, SceneObject, load_caption_data, random_scene, random_scenes
from .datasets import DATASETS, data_home, dataset_path, fetch_dataset, find_dataset
from .lm import (
                 CHAR_ALPHABET,
                 SeqDataLoader,
                 load_corpus,
                 load_data_lm,
                 num_lm_batches,
                 preprocess_lm,
                 pydoc_text,
                 seq_data_iter_random,
                 seq_data_iter_sequential,
                 split_corpus,
                 tokenize_lm,
)
from .nmt import NMT_RESERVED_TOKENS, build_array_nmt, load_data_nmt, load_parallel_corpus, nmt_batches, truncate_pad
from .series import KStepPredictions, LagFeatures, NoisySine, k_step_predictions, lag_features, noisy_sine
from .tasks import (
                 DATE_FORMATS,
                 DATE_RANGE,
                 SPACE,
                 TASKS,
                 TaskData,
                 TaskText,
                 dates_pairs,
                 detokenize_french,
                 english_number,
                 format_date,
                 french_number,
                 load_task,
                 numbers_pairs,
                 outside_task_format,
                 reverse_pairs,
                 task_capacity,
                 task_text,
                 tokenize_french,
)
from .text import preprocess_nmt, tokenize_nmt
from .translation import (
    FILE_HELD_OUT,
    TranslationData,
    UnknownWord,
    load_translation_data,
    source_tokens,
    target_text,
    unknown_words,
)
from .vocab import UNK, Vocab

__all__ = ["BatchIterator", "NMT_RESERVED_TOKENS", "UNK", "Vocab", "build_array_nmt", "load_data_nmt",
           "load_parallel_corpus", "nmt_batches", "preprocess_nmt", "tokenize_nmt", "truncate_pad"]
__all__ += ["CHAR_ALPHABET", "SeqDataLoader", "load_corpus", "load_data_lm", "num_lm_batches", "preprocess_lm",
            "pydoc_text", "seq_data_iter_random", "seq_data_iter_sequential", "split_corpus", "tokenize_lm"]
__all__ += ["DATE_FORMATS", "DATE_RANGE", "SPACE", "TASKS", "TaskData", "TaskText", "dates_pairs", "detokenize_french",
            "english_number", "format_date", "french_number", "load_task", "numbers_pairs", "outside_task_format",
            "reverse_pairs", "task_capacity", "task_text", "tokenize_french"]
__all__ += ["DATASETS", "data_home", "dataset_path", "fetch_dataset", "find_dataset"]
__all__ += ["FILE_HELD_OUT", "TranslationData", "UnknownWord", "load_translation_data", "source_tokens", "target_text",
            "unknown_words"]
__all__ += ["KStepPredictions", "LagFeatures", "NoisySine", "k_step_predictions", "lag_features", "noisy_sine"]
__all__ += ["CaptionData", "CaptionSplit", "Scene", "SceneObject", "load_caption_data", "random_scene", "random_scenes"]
