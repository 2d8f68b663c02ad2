"""Strings in, strings out: the one path from a request to its outputs (``Translator``), the
one loader (``luong.load``), and the policy for the sources a user passes (too long, unknown
symbols).

``luong.load(folder, device=..., precision=...)`` returns a ``Translator``;
``translate(model, texts)`` does the same for a ``Seq2Seq`` in hand (a model just trained,
say). Both take an ``Ensemble`` as well (``luong.load([folder, ...])``). Every face decodes
through ``Translator.translations``: ``luong translate`` (``output_lines``), ``luong eval``
(``luong.evaluation.evaluate``), ``luong po`` (``luong.catalogs.fill.translate_messages``) and the
server's two APIs; search itself is ``luong.search``, the placeholders' mechanisms
``luong.translation.placeholders``, a glossary's terms ``luong.memory.glossary``.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import torch

from luong.common.devices import (
    autocast,
    check_precision,
    keep_compiled_kernels,
    precision_note,
    resolve_device,
    reuse_freed_memory,
)
from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import folder_list
from luong.common.progress import WorkProgress
from luong.config.decoding import decoding_defaults, with_defaults
from luong.config.model import Seq2SeqConfig
from luong.config.request import RequestOptions
from luong.config.search import SearchOptions
from luong.config.translation_request import TranslationRequest
from luong.data.vocab import Vocab
from luong.memory.glossary import Glossary, Term, enforced_terms, glossary_of
from luong.memory.glossary_files import read_glossary
from luong.memory.translation_memory import DEFAULT_THRESHOLD, TranslationMemory
from luong.model.ensemble import Decodable, Ensemble, members_of
from luong.model.seq2seq import Seq2Seq
from luong.search import decode_batches, source_symbols
from luong.search.constrained import constraint_ids
from luong.training.checkpoint import is_stopped_run, stopped_run_model
from luong.translation.admission import Verdict, admit, refusals, source_limit
from luong.translation.placeholders import check_phrases, mask_source
from luong.translation.translations import Job, Translation, counted, with_memory, with_terms

__all__ = ["Translator", "load", "load_model", "translate", "translate_nbest"]


def translate(
    model: Decodable,
    texts: Sequence[str],
    options: SearchOptions | None = None,
    *,
    batch_size: int = 512,
    constraints: Sequence[Sequence[str]] | None = None,
    exact: bool = False,
) -> list[str]:
    """Translate raw strings, batched; the best output per input, in order
    (``Translator(model).translate``).

    Greedy search by default (``luong.search.decode`` does the work and gives the
    hypotheses themselves: scores, tokens, attention).

    Args:
        model: the model, or an ``Ensemble``.
        texts: the sources.
        options: how to decode (``SearchOptions``: beam, penalties, prefix, sampling,
            ``replace_unk``: each ``<unk>`` replaced by the source token it attended to
            most, ...); default greedy search.
        batch_size: sentences per search call.
        constraints: per input, the phrases its output must contain (terminology,
            placeholders), each as often as listed; ``[]`` for none (lexically constrained
            beam search, ``luong.search.decode``).
        exact: with constraints, each phrase exactly as often as listed.

    Returns:
        one output per input; ``""`` for an empty (or whitespace-only) input.

    Raises:
        TypeError: ``texts`` is not a sequence of strings, ``options`` not a
            ``SearchOptions``.
        ValueError: ``batch_size`` below 1, a prefix outside the target vocabulary, bad
            constraints (``luong.search.decode``).
    """
    translator = Translator(model)
    return translator.translate(
        texts, options, batch_size=batch_size, constraints=constraints, exact=exact
    )


def translate_nbest(
    model: Decodable,
    texts: Sequence[str],
    options: SearchOptions | None = None,
    *,
    batch_size: int = 512,
    constraints: Sequence[Sequence[str]] | None = None,
    exact: bool = False,
) -> list[list[str]]:
    """``translate``, with each input's ``options.nbest`` outputs (or draws), best first: a
    list per input (empty for an empty input)."""
    translator = Translator(model)
    return translator.translate_nbest(
        texts, options, batch_size=batch_size, constraints=constraints, exact=exact
    )


class Translator:
    """A trained model, or an ensemble of them, and the one path from a request to its
    outputs: what ``luong.load`` returns, and what every face calls (``luong translate``,
    ``luong eval``, ``luong po``, the server's ``/api/translate`` and LibreTranslate's
    ``/translate``).

    ``translations`` is that path: sources, a ``SearchOptions`` (how to search) and a
    ``RequestOptions`` (placeholders, alignment, attention) in, a ``Translation`` per source
    out. It masks placeholders and puts them back, searches again with constraints where an
    output missed one, aligns, and computes in the translator's precision (autocast, entered
    on the thread that decodes: a server's worker thread too).

    A request that says nothing of how to search is decoded with ``search``, the model's
    decoding defaults (``luong.config.decoding``: what ``from_pretrained`` reads of the
    folder, the search its training chose for its test split; greedy search for a model
    given here without them); one that says some of it gets the rest from them
    (``options``).

    Args:
        model: the ``Seq2Seq`` or ``Ensemble`` to translate with.
        precision: ``luong.config.choices.PRECISIONS``: ``"fp32"``, or ``"bf16"`` / ``"fp16"`` (fp16
            on CUDA only): the search under autocast.
        search: the model's decoding defaults (default greedy search).
    """

    def __init__(
        self, model: Decodable, precision: str = "fp32", search: SearchOptions | None = None
    ) -> None:
        if not isinstance(model, Seq2Seq | Ensemble):
            raise LuongTypeError(
                f"model: expected a Seq2Seq or an Ensemble, got {type(model).__name__}"
            )
        if search is not None and not isinstance(search, SearchOptions):
            raise LuongTypeError(f"search: expected SearchOptions, got {type(search).__name__}")
        device = members_of(model)[0].device
        check_precision(precision, device)
        note = precision_note(precision, device)  # bf16 on a CPU without units
        if note:
            logging.getLogger("luong").warning(note)
        reuse_freed_memory()  # a search's per-step buffers: no page faults
        keep_compiled_kernels()  # oneDNN's kernels of each shape, compiled once
        self.model = model
        self.precision = precision
        self.search = SearchOptions() if search is None else search
        self.memory: TranslationMemory | None = None  # with_resources
        self.glossary: Glossary | None = None

    def with_resources(
        self,
        memory: Sequence[str | Path] = (),
        glossary: str | Path | None = None,
        *,
        tm_threshold: float = DEFAULT_THRESHOLD,
        tgt_lang: str | None = None,
    ) -> Translator:
        """This translator (the same model) with its language pair's translation memory
        and glossary, each read once from its files: ``memory``'s files as one memory
        (``TranslationMemory.read``: a TMX file's units chosen by the pair, a catalog's
        language checked; fuzzy matches from ``tm_threshold``), and ``glossary``'s file
        (``read_glossary`` in the pair, every target term checked against the target
        vocabulary: ``check_glossary``). ``translations`` consults this memory unless a
        call gives its own; the faces hold this glossary's terms (``glossary.pairs()``).
        ``tgt_lang``: the target they are read in (default the model's; ``luong po``: the
        catalog's language). The faces pass file names here, and build neither.

        Raises:
            FileNotFoundError: a file that does not exist.
            ValueError: a file that does not read (as ``TranslationMemory.read`` and
                ``read_glossary``), a term the target vocabulary cannot write.
        """
        if isinstance(memory, str | Path):
            raise LuongTypeError(f"memory: expected a list of file names, got {memory!r:.60}")
        pair = (self.src_lang, self.tgt_lang if tgt_lang is None else tgt_lang)
        other = copy.copy(self)
        other.memory = TranslationMemory.read(memory, *pair, tm_threshold) if memory else None
        other.glossary = None
        if glossary is not None:
            other.glossary = self.check_glossary(read_glossary(glossary, *pair))
        return other

    @classmethod
    def from_pretrained(
        cls,
        directory: str | Path | Sequence[str | Path],
        device: str | torch.device = "cpu",
        precision: str = "fp32",
        *,
        names: tuple[str, str] = ("device", "precision"),
    ) -> Translator:
        """The one loader: a model folder (``Seq2Seq.from_pretrained``: a float or an int8
        folder), or a list of them as an ``Ensemble`` (a list of one too), on ``device``
        (a name, ``luong.config.choices.DEVICES``, resolved and checked on this machine before
        anything is read: ``luong.common.devices.resolve_device``), computing in ``precision``.
        ``names``: what the messages call the device and the precision (a command line
        names its flags: ``("--device", "--precision")``). Its decoding defaults are the
        folder's (an ensemble's first folder's): ``luong.config.decoding``.

        Raises:
            ValueError: a device this machine lacks, a precision it cannot run there, a
                folder that is no model (``Seq2Seq.from_pretrained``), a ``config.toml``
                whose test decoding is out of bounds.
        """
        if isinstance(device, str):
            device = resolve_device(device, names[0])
        if not isinstance(device, torch.device):
            raise LuongTypeError(f"device: expected a device name, got {type(device).__name__}")
        check_precision(precision, device, names[1])
        if isinstance(directory, str | Path):
            return cls(load_model(directory, device), precision, decoding_defaults(directory))
        if not isinstance(directory, Sequence):
            raise LuongTypeError(
                f"directory: expected a model folder or a list of them, got {type(directory)}"
            )
        folders = folder_list("directory", directory)
        models = [load_model(folder, device) for folder in folders]
        ensemble = Ensemble(models, [str(folder) for folder in folders])
        return cls(ensemble, precision, decoding_defaults(directory[0]))

    def options(
        self, given: Mapping[str, Any] | None = None, cls: type[SearchOptions] = SearchOptions
    ) -> SearchOptions:
        """How to search for a request that says ``given`` (fields of ``SearchOptions``: a
        command's flags, a request's fields): those, and the model's decoding defaults
        (``search``) for the rest (``luong.config.decoding.with_defaults``: a sampling
        request takes none of the defaults' beam, alpha and beta).

        Raises:
            OptionError: the options together out of bounds.
        """
        return with_defaults(given or {}, self.search, cls)

    @property
    def config(self) -> Seq2SeqConfig:
        """The model's config (an ensemble's first member's)."""
        return members_of(self.model)[0].config

    @property
    def members(self) -> list[Seq2Seq]:
        """The models it translates with: one, or an ensemble's members."""
        return members_of(self.model)

    @property
    def device(self) -> torch.device:
        """Where the model computes."""
        return self.members[0].device

    @property
    def src_lang(self) -> str | None:
        """The source language (an ISO 639 code, ``config.json``'s ``"src_lang"``); None
        when the model folder records none.

        Raises:
            ValueError: an ensemble whose members record different pairs."""
        return self._pair()[0]

    @property
    def tgt_lang(self) -> str | None:
        """The target language, as ``src_lang``."""
        return self._pair()[1]

    def _pair(self) -> tuple[str | None, str | None]:
        pairs = {(m.src_lang, m.tgt_lang) for m in self.members}
        if len(pairs) > 1:
            named = ", ".join(sorted(f"{s or '?'}-{t or '?'}" for s, t in pairs))
            raise LuongError(
                f"the ensemble's members record different language pairs ({named}); record "
                "one pair on every member (luong pair DIR --src-lang .. --tgt-lang ..)"
            )
        return next(iter(pairs))

    @property
    def src_vocab(self) -> Vocab:
        return self.model.src_vocab

    @property
    def tgt_vocab(self) -> Vocab:
        return self.model.tgt_vocab

    def computing(self) -> AbstractContextManager[Any]:
        """The context the model computes in: autocast in the translator's precision
        (``luong.common.devices.autocast``; nothing for fp32). Autocast is per thread: enter it
        in the thread that runs the model. ``translations`` enters it itself; this is for
        the callers that run the model another way (a plot of its attention scores)."""
        return autocast(self.precision, self.device)

    def check_constraints(
        self, constraints: Sequence[Sequence[str]], request: RequestOptions | None = None
    ) -> None:
        """Raise unless ``constraints`` (per source, its phrases) are phrases the target
        vocabulary can produce, within the search's bounds
        (``luong.search.constrained.constraint_ids``: ``constraints[i]: ...``), and, with
        ``request``'s placeholders kept, none holds a placeholder
        (``luong.translation.placeholders.check_phrases``)."""
        constraint_ids(self.tgt_vocab, constraints)
        if request is not None and request.placeholders != "off":
            check_phrases(constraints)

    def check_glossary(self, glossary: Glossary | Sequence[Sequence[str]]) -> Glossary:
        """``glossary`` (a ``Glossary``, or a request's ``(source term, target term)``
        pairs) as a ``Glossary``, once every target term is known to be one the target
        vocabulary can write (``Glossary.check_vocab``: the error names the term where it is
        written, ``FILE:LINE`` or ``glossary[I]``), before anything is decoded.

        Raises:
            TypeError: not a ``Glossary`` or a list of pairs of strings.
            ValueError: a bad term (``luong.memory.glossary.Glossary``), a target the vocabulary
                cannot write.
        """
        if not isinstance(glossary, Glossary):
            if isinstance(glossary, str) or not isinstance(glossary, Sequence):
                raise LuongTypeError(
                    f"glossary: expected a Glossary or (source, target) pairs, got "
                    f"{type(glossary).__name__}"
                )
            hashable = all(isinstance(pair, tuple) for pair in glossary)
            glossary = glossary_of(tuple(glossary)) if hashable else Glossary.of(glossary)
        glossary.check_vocab(self.tgt_vocab)
        return glossary

    @property
    def max_src_len(self) -> int:
        """The longest source the model takes, in symbols (the smallest of an ensemble's)."""
        return source_limit(self.model)

    def admit(
        self,
        sources: Sequence[str],
        request: RequestOptions | None = None,
        *,
        max_src_len: int | None = None,
    ) -> list[Verdict | None]:
        """The verdict on each source (``luong.translation.admission.admit``): None where the model
        takes it as ``request`` decodes it; ``max_src_len``: another limit than the
        model's own (``source_limit``). Every face asks here and maps a refusal to its own
        error."""
        return admit(self.model, sources, request, max_src_len=max_src_len)

    def source_symbols(self, text: str) -> list[str]:
        """The symbols the model reads for ``text`` (one per attention column), ``"</s>"``
        last."""
        return source_symbols(self.model, text)

    def answer(
        self,
        sources: Sequence[str],
        request: TranslationRequest | None = None,
        *,
        progress: WorkProgress | None = None,
    ) -> Iterator[Translation]:
        """The one path from a request to its outputs: a ``Translation`` per source of
        ``sources``, in order, handed out a window at a time (memory holds one window's),
        for ``request``, a ``TranslationRequest`` (``luong.config.translation_request``: every
        face builds one and hands it here whole).

        The translator's translation memory (``with_resources``; consulted unless
        ``request.options.memory`` is false;
        ``TranslationMemory.recall``): a source it holds exactly, with a translation that
        could be an output of it (no line break or control character the source lacks, the
        source's placeholders kept, the terms of the request's glossary held:
        ``luong.memory.translation_memory.unfit_reason``), takes that translation (``origin``
        ``"memory"``), written as one line as every output is (``luong.data.vocab.one_line``), and
        is not decoded; every other source is decoded as below and carries the memory's fuzzy
        matches (``Translation.matches``).

        Placeholders (``request.options.placeholders``, ``luong.translation.placeholders``):
        ``"mask"``: each source's spans masked before the search and put back after, where
        the attention aligns them; ``"constrain"``: an output that misses one of its
        source's spans is searched again by constrained beam search holding each exactly as
        often
        (``keep_placeholders``, for a search call's misses together; masked where that
        fails too), the ``constraints`` of its
        source held too, at least as often as listed (in the masked search as well); not
        with sampling. With placeholders kept, no phrase of ``constraints`` may hold a
        placeholder of its own (``luong.translation.placeholders.check_phrases``); with ``"mask"``,
        the masked source is decoded with ``constraints``, and no span is put back inside one.

        A glossary (``request.options.glossary``, ``luong.memory.glossary``): the terms found
        in each source add their target terms to its ``constraints``, each held at least once
        (``enforced_terms``; with ``exact``, the source's own phrases exactly, the terms at
        least), in every search above; the terms a translation holds are its ``terms``. Not
        with sampling.

        Args:
            sources: the inputs.
            request: the request (default ``TranslationRequest()``: the model's decoding
                defaults, nothing asked beside).
            progress: advanced by each source as its first search (or the memory) is done.

        Raises:
            TypeError: ``request`` is not a ``TranslationRequest``.
            ValueError: a source the model does not take as the request decodes it
                (``admit``: longer than ``max_src_len``, not valid Unicode), the first
                named (``"sources[3]: 412 symbols, above the maximum source length 400 (1
                refused source); ..."``); ``constraints`` not one list per source, or a
                phrase that holds a placeholder with placeholders kept; placeholders
                ``"constrain"`` or a glossary with sampling (``RequestOptions.check_search``);
                a glossary's term that is malformed or that the target vocabulary cannot
                write (``check_glossary``); as ``luong.search.decode_batches``; all on the
                call itself.
        """
        request = TranslationRequest() if request is None else request
        if not isinstance(request, TranslationRequest):
            raise LuongTypeError(
                f"request: expected a TranslationRequest, got {type(request).__name__}"
            )
        request.check_sources(sources)
        search = self.search if request.search is None else request.search
        options = request.options
        constraints: Sequence[Sequence[str]] | None = request.constraints
        exact = request.exact
        memory = self.memory
        if progress is not None and not isinstance(progress, WorkProgress):
            raise LuongTypeError(f"progress: expected WorkProgress, got {type(progress).__name__}")
        options.check_search(search)
        refused = refusals(self.admit(sources, options, max_src_len=request.max_src_len))
        if refused:  # the rule every face maps to its own error, checked before decoding
            first, verdict = refused[0]
            raise LuongError(
                f"sources[{first}]: {verdict.detail} ({len(refused)} refused source"
                f"{'s' * (len(refused) != 1)}); cut it to the model's maximum "
                f"(luong.translation.admission.truncate_source) or leave it out"
            )
        if constraints is not None and options.placeholders != "off":
            check_phrases(constraints)
        glossary = self.check_glossary(options.glossary) if options.glossary else None
        recalls = None
        if memory is not None and options.memory:
            # a reused translation holds the glossary's terms, as a decoded one does
            recalls = [
                memory.recall(text, glossary.targets(text) if glossary is not None else ())
                for text in sources
            ]
            decoded = [i for i, recall in enumerate(recalls) if recall.exact is None]
            everything = sources
            sources = [everything[i] for i in decoded]
            if constraints is not None:
                constraints = [constraints[i] for i in decoded]
            if progress is not None:
                progress.advance(len(everything) - len(sources))
        terms: list[list[Term]] | None = None
        held: bool | list[list[bool]] = exact
        if glossary is not None:
            given = constraints if constraints is not None else [[] for _ in sources]
            terms = [
                enforced_terms(glossary, source, self.tgt_vocab, phrases)
                for source, phrases in zip(sources, given, strict=True)
            ]
            constraints, held = with_terms(given, exact, terms)
        masked = None
        if options.placeholders == "mask":
            masked = [mask_source(text) for text in sources]
        with self.computing():
            batches = decode_batches(
                self.model,
                sources if masked is None else [m.text for m in masked],
                search,
                batch_size=request.batch_size,
                window=request.window,
                attention=options.keeps_attention or search.replace_unk,
                constraints=constraints,
                exact=held,
            )
        if progress is not None:
            batches = counted(batches, progress)
        job = Job(self, sources, search, options, masked, constraints, terms, held)
        if recalls is None:
            return job.run(batches)
        return with_memory(everything, recalls, job.run(batches), options.align)

    def translations(
        self,
        sources: Sequence[str],
        search: SearchOptions | None = None,
        request: RequestOptions | None = None,
        *,
        constraints: Sequence[Sequence[str]] | None = None,
        exact: bool = False,
        batch_size: int = 512,
        window: int | None = None,
        memory: TranslationMemory | None = None,
        progress: WorkProgress | None = None,
    ) -> Iterator[Translation]:
        """``answer`` with the request's parts as arguments, for a caller in Python:
        ``translations(texts, SearchOptions(beam=5), RequestOptions(align=True))`` is
        ``answer(texts, TranslationRequest(SearchOptions(beam=5), RequestOptions(align=True)))``
        (``search`` None: the model's decoding defaults; ``request`` None: ``RequestOptions()``;
        the rest as ``TranslationRequest``'s fields). ``memory``: a translation memory
        consulted instead of the translator's own (``with_resources``).

        Raises:
            TypeError: ``memory`` not a ``TranslationMemory``; as ``TranslationRequest``.
            ValueError: as ``TranslationRequest`` and ``answer``.
        """
        asked = TranslationRequest(
            search,
            RequestOptions() if request is None else request,
            constraints=constraints,
            exact=exact,
            batch_size=batch_size,
            window=window,
        )
        translator = self
        if memory is not None:
            if not isinstance(memory, TranslationMemory):
                raise LuongTypeError(
                    f"memory: expected a TranslationMemory, got {type(memory).__name__}"
                )
            translator = copy.copy(self)
            translator.memory = memory
        return translator.answer(sources, asked, progress=progress)

    def translate(
        self,
        texts: Sequence[str],
        options: SearchOptions | None = None,
        request: RequestOptions | None = None,
        *,
        batch_size: int = 512,
        constraints: Sequence[Sequence[str]] | None = None,
        exact: bool = False,
        progress: WorkProgress | None = None,
    ) -> list[str]:
        """The best output per input, in order (``""`` for an empty input):
        ``translations``' first texts (``options`` None: the model's decoding defaults)."""
        lists = self.translate_nbest(
            texts,
            options,
            request,
            batch_size=batch_size,
            constraints=constraints,
            exact=exact,
            progress=progress,
        )
        return [outs[0] if outs else "" for outs in lists]

    def translate_nbest(
        self,
        texts: Sequence[str],
        options: SearchOptions | None = None,
        request: RequestOptions | None = None,
        *,
        batch_size: int = 512,
        constraints: Sequence[Sequence[str]] | None = None,
        exact: bool = False,
        progress: WorkProgress | None = None,
    ) -> list[list[str]]:
        """``options.nbest`` outputs per input, best first (``translations``' texts;
        ``options`` None: the model's decoding defaults)."""
        translations = self.translations(
            texts,
            options,
            request,
            batch_size=batch_size,
            constraints=constraints,
            exact=exact,
            progress=progress,
        )
        return [translation.texts for translation in translations]


def load_model(folder: str | Path, device: str | torch.device = "cpu") -> Seq2Seq:
    """A model folder's model (``Seq2Seq.from_pretrained``), or a run folder's stopped
    before its end (``luong.training.checkpoint.stopped_run_model``: its latest checkpoint's best
    dev weights), logging the line that says which checkpoint.

    Raises:
        FileNotFoundError, ValueError: as ``Seq2Seq.from_pretrained``; a stopped run with no
            checkpoint to use says how to resume it.
    """
    if not isinstance(folder, str | Path):
        raise LuongTypeError(f"folder: expected a model folder, got {type(folder).__name__}")
    keep_compiled_kernels()  # before an int8 folder's weights are prepacked by oneDNN
    if not is_stopped_run(folder):
        return Seq2Seq.from_pretrained(folder, device=device)
    model, note = stopped_run_model(folder, device)
    logging.getLogger("luong").warning(note)
    return model


def load(
    directory: str | Path | Sequence[str | Path],
    device: str | torch.device = "cpu",
    precision: str = "fp32",
    *,
    names: tuple[str, str] = ("device", "precision"),
) -> Translator:
    """Load a saved model folder for translation, or a list of folders as an ensemble, on
    ``device`` in ``precision`` (``Translator.from_pretrained``, the one loader):
    ``luong.load(["runs/a", "runs/b"], device="auto").translate(...)``."""
    return Translator.from_pretrained(directory, device, precision, names=names)
