"""The ``form`` head: the ``word`` head's NB-SVM on form-only text.

It reads word 1-4-grams of :func:`gatebench.gate.form.form_only` text, where
every word but the function words is masked: how a text asks, not what it is
about. Alone it ranks attacks poorly (most attacks are told by what they ask
for) but rarely flags benign text it never saw. It is opt-in: stacked beside
the topic-reading heads it adds about 0.01 of recall on never-seen kinds and
leaves the false alarms on benign questions about attack topics where they
were ("Form-only text" in ``benchmarks/RESULTS.md``).
"""

from __future__ import annotations

from collections.abc import Sequence

import scipy.sparse as sp

from gatebench.gate._ngrams import word_ngram_counts
from gatebench.gate.form import form_texts
from gatebench.gate.heads.word import WordHead

__all__ = ["FormHead"]


class FormHead(WordHead):
    """Word n-gram NB-SVM on form-only text (same parameters as :class:`WordHead`).

    The default n-grams are longer (1-4): with the topic masked, the order
    of the function words around the masks is what the head can read.
    """

    name = "form"
    view = "form"
    default_ngrams = (1, 4)

    def represent(self, texts: Sequence[str]) -> sp.csr_matrix:
        return word_ngram_counts(form_texts(texts), self.ngram_range, self.n_features)
