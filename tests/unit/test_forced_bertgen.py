"""BertGen's forced scoring (models.bertgen_scoring.target_nll through mmt_repro.decode.forced): the NLL of a
greedy hypothesis is minus the log-probabilities of the tokens the [MASK]-shift decoder picked,
a sentence gets the same NLL in any batch, and the mean over a batch's tokens is the training
loss on its unrolled examples. Tiny random BertGen, tiny WordPiece vocabulary."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mmt_repro.datasets.batching import ParallelData
from mmt_repro.datasets.view import training_view
from mmt_repro.decode.forced import batch_nll, forced_nll, scoring_capable
from mmt_repro.decode.loop import decode_data
from mmt_repro.models import Vocabs, build_model
from mmt_repro.models.bertgen import layout, text_ids
from mmt_repro.models.bertgen_scoring import target_nll
from mmt_repro.settings import DecodeSettings
from mmt_repro.text.vocab import Vocab
from bertgen_toys import WORDS, Regions, wordpiece_vocab

TINY = dict(hidden_size=32, num_layers=2, num_heads=4, ffn_size=64, img_dim=6, coord_freqs=4, init="random",
            full_image="mean", max_regions=5, dropout=0.0, attention_dropout=0.0, region_dropout=0.0,
            visual_ln_init=1.0)  # the image reaches the text (VL-BERT's 0 would hide it from a random model)
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def vocab(tmp_path_factory) -> Vocab:
    return wordpiece_vocab(tmp_path_factory.mktemp("wp"))


def corpus(tmp, n: int, seed: int = 0, lines=None) -> tuple:
    rng = np.random.default_rng(seed)
    src, tgt = [], []
    for _ in range(n):
        src.append(" ".join(WORDS[i] for i in rng.integers(0, 30, size=rng.integers(1, 7))))
        tgt.append(" ".join(WORDS[i] for i in rng.integers(0, 30, size=rng.integers(1, 9))))
    (tmp / "src").write_text("\n".join(src) + "\n")
    (tmp / "tgt").write_text("\n".join(lines or tgt) + "\n")
    return tmp / "src", tmp / "tgt"


def tiny(vocab):
    torch.manual_seed(0)
    return build_model("bertgen.bertgen", TINY, Vocabs.of(vocab, vocab)).double().eval()


def trained(vocab, data, steps: int = 25):
    """A tiny model after a few Adam steps on ``data``'s unrolled examples: it has learnt to say
    [STOP] (hypotheses of several lengths, some ended by the decoder's own [STOP])."""
    model = tiny(vocab).train()
    mix = training_view(model, data)
    batch = mix.collate(np.stack([np.zeros(len(mix), int), np.arange(len(mix))], 1))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        loss = model(batch)["loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


def test_bertgen_is_scoring_capable(vocab):
    assert scoring_capable(tiny(vocab)) == (True, "")
    # a model that decodes itself without a target_nll gives no probability of a translation
    other = type("M", (), {"decoding": "custom", "registry_name": "toy.custom"})()
    ok, why = scoring_capable(other)
    assert not ok and why.startswith("toy.custom decodes itself (custom) and has no target_nll")
    with pytest.raises(ValueError, match="has no target_nll"):
        batch_nll(other, {})


@pytest.mark.parametrize("with_images", [False, True])
def test_forced_nll_of_the_greedy_output_is_minus_the_decoders_log_probs(vocab, tmp_path, with_images):
    """Greedy-decode, then step the [MASK]-shift prediction by hand along the hypothesis: the sum
    of the log-probabilities (full softmax) of the tokens the decoder picked, [STOP] included,
    is minus the forced NLL of the hypothesis."""
    src, tgt = corpus(tmp_path, 5, seed=1)
    store = Regions(5) if with_images else None
    data = ParallelData(src, vocab, tgt, vocab, features=store, langs=("en", "de"))
    model = trained(vocab, data)
    settings = DecodeSettings(beam_size=1, max_len=8, max_len_a=0, batch_size=5)
    hyps = decode_data(model, data, settings, CPU).hyps
    forbid = model.never_emitted()
    want, stopped = [], []
    for i, hyp in enumerate(hyps):
        one = data.collate([i])
        imgs = model.images(one)
        obj = None if imgs is None else model.regions(imgs[0], imgs[2])
        total, prefix = 0.0, []
        for _ in range(len(hyp) + 1):
            text = text_ids(model.lang_id("de"), model.cls_id, model.sep_id, model.mask_id, data.src[i], prefix)
            regs = [int(imgs[1][0].sum())] if imgs is not None else []
            lay = layout([text], [len(text) - 2], [0 if imgs is not None else -1], regs,
                         obj.size(1) if obj is not None else 1, vocab.pad_id)
            with torch.no_grad():
                logits = model.predict(model.hidden(lay, obj))[0].float()
            masked = logits.clone()
            masked[forbid] = -torch.inf
            y = int(masked.argmax())
            if len(prefix) == len(hyp):  # the decoder's last pick: [STOP], or the length bound
                stopped.append(y == vocab.eos_id)
                y = vocab.eos_id
            assert len(prefix) == len(hyp) or y == hyp[len(prefix)]
            total += float(logits.log_softmax(-1)[y])
            prefix.append(y)
        want.append(-total)
    assert any(stopped)  # at least one hypothesis ended with the decoder's own [STOP]
    (tmp_path / "hyp").write_text("\n".join(" ".join(vocab.id_to_token(t) for t in h) for h in hyps) + "\n")
    scored = ParallelData(src, vocab, tmp_path / "hyp", vocab, features=store, langs=("en", "de"))
    assert [list(map(int, y)) for y in scored.tgt] == hyps
    nll, n_tokens = forced_nll(model, scored, CPU, batch_size=3)
    assert n_tokens.tolist() == [len(h) + 1 for h in hyps]
    np.testing.assert_allclose(nll, want, rtol=1e-5, atol=1e-5)


def test_a_sentence_gets_the_same_nll_alone_and_in_any_batch(vocab, tmp_path):
    src, tgt = corpus(tmp_path, 7, seed=2)
    data = ParallelData(src, vocab, tgt, vocab, features=Regions(7), langs=("en", "de"))
    assert len({len(y) for y in data.tgt}) > 2  # targets of different lengths share the batches
    model = tiny(vocab)
    together, n_all = forced_nll(model, data, CPU, batch_size=7)
    alone, n_one = forced_nll(model, data, CPU, batch_size=1)
    assert n_all.tolist() == n_one.tolist() == [len(y) + 1 for y in data.tgt]
    np.testing.assert_allclose(together, alone, rtol=1e-7, atol=1e-9)
    # rows split over several passes (max_rows) change nothing either
    batch = data.collate(list(range(7)))
    with torch.inference_mode():
        few, _ = target_nll(model, batch, max_rows=4)
    np.testing.assert_allclose(few.numpy(), together, rtol=1e-7, atol=1e-9)
    # and the image matters (the NLL is of the image-conditioned model)
    other = ParallelData(src, vocab, tgt, vocab, features=Regions(7, seed=5), langs=("en", "de"))
    assert not np.allclose(forced_nll(model, other, CPU)[0], together)


@pytest.mark.parametrize("with_images", [False, True])
def test_mean_nll_per_token_is_the_training_loss_on_the_unrolled_examples(vocab, tmp_path, with_images):
    src, tgt = corpus(tmp_path, 6, seed=3)
    data = ParallelData(src, vocab, tgt, vocab, features=Regions(6) if with_images else None, langs=("en", "de"))
    model = tiny(vocab)
    mix = training_view(model, data)
    train_batch = mix.collate(np.stack([np.zeros(len(mix), int), np.arange(len(mix))], 1))
    with torch.no_grad():
        out = model(train_batch)
        nll, n_tokens = batch_nll(model, data.collate(list(range(6))))
    assert int(n_tokens.sum()) == int(out["n_tokens"]) == len(mix)
    torch.testing.assert_close(nll.sum() / n_tokens.sum(), out["loss"].double(), rtol=1e-6, atol=1e-8)


@pytest.mark.slow
def test_a_bertgen_system_gets_a_commute_accuracy_under_each_lines_regions(standin, tmp_path):
    """CoMMuTE end to end for BertGen: an exported tiny BertGen (the paper's lc.wp recipe with a
    WordPiece vocabulary learnt on the text) and a region store with one row per CoMMuTE line
    (random BUTD-layout features imported as the workflow imports BertGen's); each line's two
    translations are forced through target_nll under its own regions."""
    from mmt_repro.checkpoint import export_checkpoint, save_checkpoint
    from mmt_repro.corpora.commute import read_commute
    from mmt_repro.decode.commute import score_commute
    from mmt_repro.features.pretrained import import_pretrained
    from mmt_repro.io import write_lines
    from mmt_repro.text.system_recipe import SideRecipe, SystemRecipe
    from mmt_repro.text.wordpiece import learn_wordpiece

    text = standin("commute")["resources"]
    data = read_commute(text, "en-de")
    lines = write_lines(tmp_path / "lc.txt", [x.lower() for x in [*data.src, *data.correct, *data.incorrect]])
    system = tmp_path / "system"
    system.mkdir()
    learn_wordpiece([lines], system / "vocab.txt", vocab_size=400)
    vocab = Vocab.from_wordpiece(system / "vocab.txt")
    vocab.save(tmp_path / "vocab.json")
    recipe = SystemRecipe("bertgen", "en-de", SideRecipe("en", "lc.wp", "wordpiece", wordpiece_vocab="vocab.txt"),
                          SideRecipe("de", "lc.wp", "wordpiece", wordpiece_vocab="vocab.txt"))
    torch.manual_seed(0)
    model = build_model("bertgen.bertgen", TINY, Vocabs.of(vocab, vocab))
    ckpt = save_checkpoint(tmp_path / "m.pt", model, {"src": vocab.fingerprint(), "tgt": vocab.fingerprint()},
                           with_rng=False)
    export_checkpoint(ckpt, system, src_vocab=tmp_path / "vocab.json", tgt_vocab=tmp_path / "vocab.json")
    recipe.save(system)
    # one row of regions per line, in img.order's order (BertGen's butd-regions, imported)
    n, k = len(data.images), 4
    rng = np.random.default_rng(0)
    xy = rng.random((n, k, 2), dtype=np.float32) * 0.5
    wh = rng.random((n, k, 2), dtype=np.float32) * 0.4 + 0.1
    np.savez(tmp_path / "commute_obj36.npz", features=rng.normal(size=(n, k, 6)).astype(np.float32),
             boxes_and_areas=np.concatenate([xy, xy + wh, wh[..., :1] * wh[..., 1:]], -1), order=np.arange(n))
    image_list = write_lines(tmp_path / "commute.txt", data.images)
    npy, index = tmp_path / "commute.npy", tmp_path / "commute.index.parquet"
    import_pretrained("butd", tmp_path / "commute_obj36.npz", image_list, npy, index,
                      out_boxes=tmp_path / "commute.boxes.npy", max_boxes=k)
    result = score_commute(system, text, "en-de", tmp_path / "acc.json", features_npy=npy, features_index=index,
                           device="cpu", batch_size=32)
    assert result["model"] == "bertgen.bertgen" and result["images"] and result["segmentation"] == "wordpiece"
    assert result["n"] == 300 and result["accuracy"] == pytest.approx(100 * result["right"] / 300)
    assert result["tgt_unk_tokens"] == 0  # every character is a piece: unknown words split, no [UNK]
    assert all(x > 0 for x in result["correct_nll"] + result["incorrect_nll"])
    # the same translations under the other image of each pair: line i's correct NLL under image
    # i^1 is line i^1's incorrect NLL under its own image (the pairs swap their translations)
    swapped = tmp_path / "swapped_obj36.npz"
    np.savez(swapped, **{key: value[[i ^ 1 for i in range(n)]] if key != "order" else value
                         for key, value in np.load(tmp_path / "commute_obj36.npz").items()})
    npy2, index2 = tmp_path / "swapped.npy", tmp_path / "swapped.index.parquet"
    import_pretrained("butd", swapped, image_list, npy2, index2, out_boxes=tmp_path / "swapped.boxes.npy",
                      max_boxes=k)
    other = score_commute(system, text, "en-de", None, features_npy=npy2, features_index=index2, device="cpu")
    assert other["correct_nll"] != result["correct_nll"]  # the regions change the NLL
    assert other["correct_nll"][0] == pytest.approx(result["incorrect_nll"][1], rel=1e-5)
