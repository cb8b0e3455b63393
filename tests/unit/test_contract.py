"""The model contract (models/base.py) as the shared trainer and decoder use it: models with other
losses, without source text, with masked regions and per-example extras, and the three decoding
kinds (step search, nearest neighbour, the model's own search)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from mmt_repro.datasets.batching import ParallelData
from mmt_repro.decode.loop import decode_data, to_text
from mmt_repro.features.store import write_index
from mmt_repro.models import MMTModel, Specials, Vocabs, VocabSpec, build_model, register
from mmt_repro.models.base import nearest_neighbour_scores
from mmt_repro.settings import DecodeSettings
from mmt_repro.text.vocab import Vocab
from mmt_repro.train.trainer import train
from training_jobs import train_job


@dataclass
class CaptionConfig:
    dim: int = 16


@register("test_contract.captioner", CaptionConfig)
class Captioner(MMTModel):
    """No source text: a GRU decoder started from the masked mean of region features. Its loss
    adds the squared error of the probabilities (Brier) to the NLL and has no ``nll_sum``; it
    also reports ``brier`` and ``regions`` (the mean number of real regions per example)."""

    visual = "regions"

    def __init__(self, config, vocabs, resources=None):
        super().__init__(config, vocabs, resources)
        self.img = nn.Linear(3, config.dim)
        self.emb = nn.Embedding(vocabs.tgt.size, config.dim)
        self.cell = nn.GRUCell(config.dim, config.dim)
        self.out = nn.Linear(config.dim, vocabs.tgt.size)
        self.seen_extras = []

    def encode(self, batch):
        m = batch["img_mask"].unsqueeze(-1).float()
        return {"h0": torch.tanh(self.img((batch["img"] * m).sum(1) / m.sum(1)))}

    def init_state(self, enc):
        return enc["h0"]

    def step(self, enc, state, prev):
        h = self.cell(self.emb(prev), state)
        return F.log_softmax(self.out(h), -1), h, {}

    def forward(self, batch):
        if "task" in batch:
            self.seen_extras.extend(batch["task"])
        enc = self.encode(batch)
        state, steps = self.init_state(enc), []
        for t in range(batch["tgt_in"].size(1)):
            lp, state, _ = self.step(enc, state, batch["tgt_in"][:, t])
            steps.append(lp)
        lp = torch.stack(steps, 1)
        keep = batch["tgt_out"] != self.specials.pad
        n = keep.sum()
        gold = F.one_hot(batch["tgt_out"], lp.size(-1)).float()
        brier = (((lp.exp() - gold) ** 2).sum(-1) * keep).sum() / n
        nll = -(lp.gather(-1, batch["tgt_out"].unsqueeze(-1)).squeeze(-1) * keep).sum() / n
        return {"loss": nll + brier, "n_tokens": n, "brier": brier, "regions": batch["img_mask"].sum(1).float().mean()}


class RegionStore:
    """Padded region features: row r has ``lengths[r]`` real regions of 4 slots; the padded
    slots hold garbage (1e3) that a masked model must never see."""

    def __init__(self, colours, lengths):
        self.lengths = np.asarray(lengths)
        self.arr = np.full((len(colours), 4, 3), 1e3, dtype=np.float32)
        for r, (c, n) in enumerate(zip(colours, lengths)):
            self.arr[r, :n] = 0.0
            self.arr[r, :n, c] = 1.0

    def __len__(self):
        return len(self.arr)

    def __getitem__(self, r):
        return self.arr[r]

    def mask(self, r):
        return np.arange(4) < self.lengths[r]

    def write(self, folder, name):
        """The same rows as a feature store on disk (``n_boxes``: the real regions of each row);
        returns ``(npy, index)``."""
        np.save(folder / f"{name}.npy", self.arr)
        write_index(folder / f"{name}.index.parquet", [f"img{r}.png" for r in range(len(self.arr))],
                    {"shape": list(self.arr.shape)}, columns={"n_boxes": self.lengths})
        return folder / f"{name}.npy", folder / f"{name}.index.parquet"


@pytest.fixture
def captions(tmp_path):
    rng = np.random.default_rng(0)
    colours = rng.integers(0, 3, 48)
    words = np.array(["red", "green", "blue"])
    lines = [f"{words[c]} things are here now" for c in colours]
    (tmp_path / "train.tgt").write_text("\n".join(lines) + "\n")
    (tmp_path / "val.tgt").write_text("\n".join(lines[:12]) + "\n")
    Vocab.build([tmp_path / "train.tgt"]).save(tmp_path / "tgt.json")
    lengths = rng.integers(1, 5, 48)
    return {"dir": tmp_path, "train": RegionStore(colours, lengths), "val": RegionStore(colours[:12], lengths[:12])}


def test_batches_carry_masks_extras_and_no_source(captions):
    tv = Vocab.load(captions["dir"] / "tgt.json")
    data = ParallelData(None, None, captions["dir"] / "train.tgt", tv, features=captions["train"],
                        extras={"task": ["caption"] * 48})
    batch = data.collate([0, 1, 2])
    assert "src" not in batch and batch["ids"].tolist() == [0, 1, 2]
    assert batch["img"].shape == (3, 4, 3) and batch["img_mask"].dtype == torch.bool
    assert batch["img_mask"].sum(1).tolist() == captions["train"].lengths[:3].tolist()
    assert batch["task"] == ["caption"] * 3
    assert batch["tgt_in"][:, 0].tolist() == [tv.bos_id] * 3


def test_trainer_and_decoder_serve_a_model_without_source_text_or_nll(captions, tmp_path):
    d = captions["dir"]
    (train_npy, train_index), (val_npy, val_index) = captions["train"].write(d, "train"), captions["val"].write(d, "val")
    inputs = {"tgt_vocab": d / "tgt.json", "train_tgt": d / "train.tgt", "val_tgt": d / "val.tgt", "val_ref": d / "val.tgt",
              "train_npy": train_npy, "train_index": train_index, "val_npy": val_npy, "val_index": val_index}
    summary = train(train_job(
        tmp_path, "test_contract.captioner", {"dim": 16},
        dict(optimizer="adam", lr=0.05, batch_size=8, max_epochs=30, patience=30, log_every=0, seed=1),
        {role: str(path) for role, path in inputs.items()},  # no source text: no src_vocab, train_src, val_src
    ))
    header = (tmp_path / "curve.tsv").read_text().splitlines()[0].split("\t")
    assert {"train_regions", "train_brier"} <= set(header)  # every scalar the model returns is logged
    assert summary["best_val_bleu"] > 90  # the colour is read off the (masked) regions
    from mmt_repro.checkpoint import load_model

    model, _ = load_model(tmp_path / "best.pt")
    tv = Vocab.load(d / "tgt.json")
    val = ParallelData(None, None, features=captions["val"])
    out = decode_data(model, val, DecodeSettings(beam_size=3, max_len=9, batch_size=5), torch.device("cpu"))
    assert to_text(out.hyps, tv) == (d / "val.tgt").read_text().splitlines()


def test_padded_regions_never_reach_the_model(captions):
    torch.manual_seed(0)
    tv = Vocab.load(captions["dir"] / "tgt.json")
    model = build_model("test_contract.captioner", {}, Vocabs.of(None, tv)).eval()
    data = ParallelData(None, None, captions["dir"] / "train.tgt", tv, features=captions["train"])
    batch = data.collate(list(range(8)))
    enc = model.encode(batch)
    garbage = dict(batch, img=batch["img"].masked_fill(~batch["img_mask"].unsqueeze(-1), -7.0))
    assert torch.allclose(enc["h0"], model.encode(garbage)["h0"])


@dataclass
class NearestConfig:
    dim: int = 4


@register("test_contract.nearest", NearestConfig)
class NearestModel(MMTModel):
    """Continuous output: predicts an embedding; the scores are similarities to a fixed table
    in which the embedding of token ``prev + 1`` is what it predicts (so it counts upwards)."""

    decoding = "nearest"

    def __init__(self, config, vocabs, resources=None):
        super().__init__(config, vocabs, resources)
        self.table = torch.eye(vocabs.tgt.size)

    def encode(self, batch):
        return {"n": batch["ids"]}

    def init_state(self, enc):
        return enc["n"] * 0

    def step(self, enc, state, prev):
        nxt = torch.clamp(prev + 1, max=self.vocabs.tgt.size - 1)
        nxt = torch.where(state >= 3, torch.full_like(nxt, self.specials.eos), nxt)
        return nearest_neighbour_scores(self.table[nxt], self.table), state + 1, {}


def test_nearest_neighbour_decoding_is_greedy_over_similarities_and_refuses_a_beam():
    model = build_model("test_contract.nearest", {}, Vocabs(src=None, tgt=VocabSpec(10, Specials(bos=4, eos=2))))
    data = ParallelData(None, None, features=[np.zeros((1, 1))] * 3)
    out = decode_data(model, data, DecodeSettings(beam_size=1, max_len=10), torch.device("cpu"))
    assert out.hyps == [[5, 6, 7]] * 3
    with pytest.raises(ValueError, match="nearest neighbour .*set decode.beam_size .* to 1"):
        decode_data(model, data, DecodeSettings(beam_size=4), torch.device("cpu"))
    sims = nearest_neighbour_scores(torch.tensor([[3.0, 4.0]]), torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]]))
    assert torch.allclose(sims, torch.tensor([[0.6, 0.8, 1.0]]))


@register("test_contract.shift", NearestConfig)
class ShiftModel(MMTModel):
    """Decodes itself (like BertGen's [MASK] shift): example i gets i + 1 copies of token 7."""

    decoding = "custom"

    def search(self, batch, settings, specials):
        return [[7] * (int(i) + 1) for i in batch["ids"]]


def test_custom_decoding_goes_through_the_models_own_search():
    model = build_model("test_contract.shift", {}, Vocabs.sizes(None, 9))
    data = ParallelData(None, None, features=[np.zeros((1, 1))] * 4)
    out = decode_data(model, data, DecodeSettings(beam_size=5, batch_size=3), torch.device("cpu"))
    assert out.hyps == [[7], [7, 7], [7, 7, 7], [7, 7, 7, 7]]


def test_a_model_must_subclass_the_contract():
    with pytest.raises(TypeError, match="must subclass mmt_repro.models.base.MMTModel"):
        register("test_contract.bad", NearestConfig)(nn.Module)
