"""Stand-in inputs: for every input of ``config/manifest.yaml``, a few dozen lines, images or
videos in the real file format and member layout, written from a seed into a mirror folder
laid out as ``inputs.mirror`` expects (``<mirror>/<mirror_dir>/<file>``), with a stand-in
manifest of their sha256 and line counts (:func:`~mmt_repro.standins.mirror.write_mirror`).

A run reads the stand-ins through the same fetch, unpack and prepare jobs as the real files:
the overlay ``standin_config.yaml`` written beside them sets ``inputs.mirror`` to the folder
and lists ``standin_manifest.yaml`` under ``inputs.manifest_extra``, which replaces the
checksums of the files it names for that run only (config/manifest.yaml is not touched); the
request-only image and video folders are named by their config keys.

What each stand-in's format was checked against (:data:`CHECKED_AGAINST`): *copy* = a local
copy of the published file (``../shared/datasets``; the stand-in starts with its first lines);
*reader* = the authors' or the format owner's reader (repository and path); *spec* = the
format's documentation or layout as the package's module docstrings cite it.
"""

from __future__ import annotations

#: input -> what its stand-in's format and layout were checked against.
CHECKED_AGAINST: dict[str, str] = {
    "multi30k_task1": "copy: ../shared/datasets/multi30k/task1 (raw/*.gz, image_splits/*.txt; first lines); "
                      "the .cs files, absent there, follow the same layout",
    "multi30k_task1_tok": "copy: ../shared/datasets/multi30k-extra/task1/tok (first lines)",
    "multi30k_task2": "copy: ../shared/datasets/multi30k/task2 (raw/<split>.<k>.<lang>.gz, "
                      "image_splits/<split>_images.txt)",
    "flickr30k_images": "spec: Flickr30k's flickr30k-images/<photo id>.jpg, named by the Multi30k image lists; "
                        "JPEG, 500-px long side",
    "mscoco_images": "spec: COCO 2014 zips, val2014/COCO_val2014_<12 digits>.jpg (cocodataset.org download page); "
                     "file names as Karpathy's dataset_coco.json and Multi30k's test_2017_mscoco list give them",
    "multi30k_features_resnet50": "reader: ImperialNLP/pysimt's object-classification configs read "
                                  "resnet50-256x256/<split>-resnet50-res5c_relu-r256-c256-l2norm.npy and its "
                                  "NumpyDataset reads (N, 2048, H, W), 8 x 8 in the release (2 x 2 unless real "
                                  "shapes); only that folder of the release is written",
    "multi30k_features_pool5_lium": "reader: lium-lst/wmt17-mmt's README (unpack under data/images) and configs "
                                    "(resnet50-imagenet-pool5/flickr30k_ResNet50_pool5_<split>.npy for train, val, "
                                    "test2017; (n, 2048)); test2016 and testcoco named as the importer's aliases "
                                    "(the README lists them in the tarball without names)",
    "multi30k_features_butd": "reader: ImperialNLP/pysimt pysimt/datasets/objdet.py (ObjectDetectionsDataset: order, "
                              "features, objects_id, attrs_id, boxes_and_areas) and data/multi30k/prepare.sh "
                              "(top folder multi30k_butd_features/, <split>_obj36.npz, valid_obj36.npz for val)",
    "wmt15_en_de": "reader: GluonNLP scripts/datasets/machine_translation/prepare_wmt.py member table "
                   "(europarl-v7.de-en.*, commoncrawl.de-en.*, news-commentary-v10.de-en.*, all at the top level)",
    "fasttext_cc": "spec: fasttext.cc crawl-vectors page (.vec: '<count> <dim>' header, 'word v1..v300' lines, gzip)",
    "karpathy_splits": "spec: Karpathy's caption_datasets.zip (dataset_{coco,flickr30k,flickr8k}.json: images with "
                       "filepath/filename/imgid/split/sentences/sentids, COCO cocoid); captions: first lines of "
                       "../shared/datasets/coco-karpathy-test-captions",
    "coco_karpathy_test_captions": "copy: ../shared/datasets/coco-karpathy-test-captions/testall_caps.txt "
                                   "(first lines)",
    "flickr8k_text": "copy: ../shared/datasets/flickr8k-text (image lists, and the Flickr8k.token.txt lines of "
                     "those images)",
    "flickr8k_images": "spec: Flickr8k's Flicker8k_Dataset/<name>.jpg, named by the Flickr8k lists; JPEG",
    "tasviret": "spec: Karpathy-style JSON (mmt_repro.corpora.captions docstring), member tasviret8k_captions.json",
    "iwslt14_de_en": "reader: fairseq examples/translation/prepare-iwslt14.sh (de-en/train.tags.de-en.*, "
                     "de-en/IWSLT14.TED*.de-en.*.xml with <seg id>)",
    "iwslt14_de_en_prepared": "copy: ../shared/datasets/iwslt14-de-en (first lines of each set; test = their "
                              "concatenation)",
    "iwslt14_fr_en": "reader: fairseq examples/translation/prepare-iwslt14.sh (as de-en, no TEDX.dev2012)",
    "setimes2_en_tr": "spec: OPUS moses zip (SETIMES.en-tr.en, SETIMES.en-tr.tr, README, LICENSE); text: first lines "
                      "of ../shared/datasets/wmt-newstest after the newstest cut",
    "wmt_newstest_sgm": "copy: ../shared/datasets/wmt-newstest/newstest2019-defr-src-ts.de.sgm (SGML layout); "
                        "reader: sacrebleu's dataset table for the members of wmt18's test.tgz "
                        "(test/newstest2018-entr-src.en.sgm, ...-ref.tr.sgm); dev/ of dev.tgz and sgm/ of wmt19's "
                        "test.tgz as the same table names them (not seen in a copy)",
    "wmt_newstest": "copy: ../shared/datasets/wmt-newstest (first lines)",
    "vl_bert_base": "reader: jackroos/VL-BERT checkpoint layout as mmt_repro.models.bertgen_convert.VLBERT_KEYS maps "
                    "it (module. prefix, state_dict); shapes shrunk unless real_shapes",
    "mbert_weights": "reader: transformers BertForPreTraining key names (LayerNorm gamma/beta spelling), as "
                     "mmt_repro.models.bertgen_convert.MBERT_KEYS maps them; safetensors; shapes shrunk unless "
                     "real_shapes",
    "bertgen_vocab": "spec: M-BERT cased vocab.txt layout ([PAD], [unused1-99], [UNK] [CLS] [SEP] [MASK] at 100-103) "
                     "with BertGen's renamed [unused] ids; 119,547 lines only with real_shapes",
    "mbert_vocab": "spec: M-BERT cased vocab.txt layout, as bertgen_vocab without BertGen's renames",
    "vatex": "spec: VATEX v1.0 JSON (list of videoID, enCap[10], chCap[10]; the last 5 parallel); val ids and "
             "parallel captions from ../shared/datasets/vatex-val-parallel",
    "vatex_val_prepared": "copy: ../shared/datasets/vatex-val-parallel (first lines)",
    "vatex_i3d": "reader: the VATEX baseline's README (unzip trainval.zip: trainval/<videoID>.npy) and its "
                 "dataloader's load_video_features (np.load(path)[0]: arrays (1, n_segments, 1024))",
    "vatex_videos": "spec: VATEX clip ids <YouTube id>_<start>_<end> (10 s); MP4 H.264",
    "commute": "copy: ../shared/datasets/commute (every line: the release is small; no final newline but in "
               "en-fr_dev)",
    "commute_images": "spec: CoMMuTE's README (tar -xvzf images.tar.gz: one folder of the images img.order names); "
                      "JPEG",
    "meteor": "reader: cmu-mtlab/meteor src/edu/cmu/meteor/util/Constants.java (the jar reads "
              "<jar folder>/data/paraphrase-<lang>.gz) and aligner/ParaphraseTransducer.java (gzip; three lines "
              "an entry: probability, phrase, paraphrase); layout meteor-1.5/meteor-1.5.jar as the release's "
              "download scripts unpack it; copy: pycocoevalcap's paraphrase-en.gz (first entries). The jar is "
              "the program itself (pycocoevalcap's meteor-1.5.jar), not a stand-in",
}
#: inputs the generator does not write, and why.
NOT_WRITTEN: dict[str, str] = {}
