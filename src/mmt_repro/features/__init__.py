"""Every view of an image or video the papers read, stored for fast training.

=====================  ================================================  ======================
view                   writer                                            store read with
=====================  ================================================  ======================
ResNet-50 grid/pooled  :func:`grid.extract_features` (res4f, res5c,      :class:`store.FeatureStore`
                       pool5), ``import_pretrained("resnet50")``
object regions         :func:`regions.extract_regions` (torchvision      :class:`store.RegionStore`
                       1024-d, detectron2 2048-d), ``import_pretrained
                       ("butd")`` (:mod:`butd`: a file per split or
                       per image)
video segments         :func:`video.extract_video_features` (I3D),       :class:`store.FeatureStore`
                       ``import_pretrained("vatex_i3d")``
=====================  ================================================  ======================

All stores are float16 ``.npy`` arrays ``(N, slots, D)`` whose row ``i`` is line ``i`` of the
split's image or video list, plus a Parquet index (names, valid slots per row, metadata);
writing is chunked, resumable and atomic (:mod:`mmt_repro.features.store`); optional
per-dimension standardisation is :mod:`mmt_repro.features.standardize`. A published release's
files are found by :mod:`mmt_repro.features.release_files` (split names, layers, sub-folders).
"""
