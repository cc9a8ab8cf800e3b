"""Block compression BC7 (BPTC), pure numpy: a decoder and an encoder of all eight modes.

Spec: the Khronos Data Format Specification (1.1 and later), chapter "BPTC Compressed Texture Image Formats", BC7
(the text of OpenGL 4.5 and ARB_texture_compression_bptc), the same format as Direct3D 11's "BC7 Format" and "BC7
Format Mode Reference" pages. The mode table, the field order, the weights and the 2- and 3-subset partition and
anchor-index tables below are that spec's; the tables were checked against Microsoft DirectXTex (BC6HBC7.cpp), and
the tests check the whole decoder against Pillow's BC7 decoder on thousands of random blocks of every mode.

Blocks: the image is cut into 4x4-texel blocks in the order and with the edge padding of ``core.bc`` (whose
helpers this module uses): row by row from the top-left, a block past the right or bottom edge repeats the last
column or row, the decoder crops. A block is 16 bytes, one 128-bit little-endian number read from bit 0: mode
``m`` is ``m`` zero bits and a one bit (a first byte of 0 is the reserved mode 8: transparent black), then

====  =======  =========  ========  =========  ======  =====  ==============  ==========
mode  subsets  partition  rotation  index sel  colour  alpha  p-bits          index bits
====  =======  =========  ========  =========  ======  =====  ==============  ==========
0     3        4 bits     -         -          4       -      1 per endpoint  3
1     2        6 bits     -         -          6       -      1 per subset    3
2     3        6 bits     -         -          5       -      -               2
3     2        6 bits     -         -          7       -      1 per endpoint  2
4     1        -          2 bits    1 bit      5       6      -               2 and 3
5     1        -          2 bits    -          7       8      -               2 and 2
6     1        -          -         -          7       7      1 per endpoint  4
7     2        6 bits     -         -          5       5      1 per endpoint  2
====  =======  =========  ========  =========  ======  =====  ==============  ==========

in that order: the header fields, then the endpoints channel by channel (red of endpoints 0 and 1 of subset 0, then
of subset 1, ...; then green, blue, alpha), then the p-bits, then the 16 indices (texel 0 first, row by row), then
the second index set (modes 4 and 5). A p-bit is the lowest bit of every channel of its endpoint (alpha too where
the mode has alpha); a mode without alpha decodes alpha 255. An ``n``-bit endpoint widens to 8 bits by bit
replication, ``v << (8 - n) | v >> (2n - 8)`` (``(v << 1) | p`` in mode 6). Texel ``k`` belongs to subset
``SUBSETS[subsets][partition][k]``; each subset's anchor texel (``ANCHORS``; texel 0 for subset 0) stores its index
with one bit less, the top bit being 0. Interpolation, per channel: ``((64 - w) * e0 + w * e1 + 32) >> 6`` with
``w`` from the 2-, 3- or 4-bit ``WEIGHTS``. Modes 4 and 5 have separate colour and alpha indices (mode 4 with the
selector bit set: colour takes the 3-bit set, alpha the 2-bit set); the rotation then swaps alpha with red (1),
green (2) or blue (3).

Encoder (vectorised over blocks, in chunks of ``CHUNK_BLOCKS``, several at once on threads: ``core.bc.in_chunks``):
every block is fitted in mode 6 (RGBA endpoints of 7 bits and a p-bit, 4-bit indices), mode 5 (a colour slot of
three channels with 7-bit endpoints and 2-bit indices, an alpha slot of one channel with 8-bit endpoints and its own
2-bit indices) and mode 4 (colour slot 5-bit endpoints, alpha slot 6-bit, one of them 2-bit indices and the other
3-bit: both index selections are fitted) and keeps the mode, and in mode 4 the selection, with the lowest weighted
squared error of its decode (ties: mode 6, then 5, then 4; selection 0). The weight: alpha's squared error counts
``ALPHA_WEIGHT`` (4) times a colour channel's, in that choice and in the fits (the principal axes are those of the
weighted texels, the palette search weighs the channels; the least-squares endpoints need no weight, they solve
channel by channel). A fit: the principal axis of the block's values (4-D for mode 6, 3-D for the colour slot, 1-D
for the alpha slot), the extreme projections on it as endpoints (range fit), then ``REFINE_STEPS`` least-squares
solutions for the endpoints given the indices; the endpoints are quantised, every texel takes the nearest entry of
the decoded palette (exhaustive search, so the block errors compared are the decoder's), and each block keeps its
best candidate. The anchor rule: an index set whose anchor index has its top bit set is inverted (``top - i``) and
its endpoints swapped, which decodes the same (``w[top - i] = 64 - w[i]`` in every table); modes 4 and 5 apply it to
each index set on its own. Blocks of one colour are written as mode 5 straight away and decode exactly: every 8-bit
value is ``(43 u0 + 21 u1 + 32) >> 6`` for some pair of 7-bit levels (colour index 1), alpha has both endpoints
equal; a block whose colour slot alone holds one colour gets the same exact colour endpoints in mode 5.

Partitioned modes: the blocks whose best error in modes 6, 5 and 4 is above ``PARTITION_FROM`` (48: on average more
than one level of each colour channel off) are fitted in modes 7 (two subsets, RGBA, 5-bit endpoints and a p-bit
each, 2-bit indices), 1 (two subsets, RGB, 6-bit endpoints and a p-bit per subset, 3-bit indices), 3 (two subsets,
RGB, 7-bit endpoints and a p-bit each, 2-bit indices), 2 (three subsets, RGB, 5-bit endpoints, 2-bit indices) and 0
(three subsets among the first 16 partitions, RGB, 4-bit endpoints and a p-bit each, 3-bit indices); modes 0 to 3
decode alpha 255, so they take opaque blocks only, and mode 7 takes the others (on opaque blocks mode 3's 8-bit
endpoints do better: mode 7 won none of the bark normal map's 65k). Each block is fitted in one partition per subset
count: the one whose subsets lie nearest a line each (``_partition_scatter``: per subset, the scatter of the
weighted texels off its principal axis, from the subsets' sums of texels and of their products, all 64 partitions in
one matrix product; R, G, B for opaque blocks). Each subset is fitted as a block is (``_fit`` over the subset's
texels); a p-bit is the one whose levels lie nearer the endpoint (``_pbit_quantiser``); the anchor rule applies to
each subset at its own anchor texel. The block keeps the partitioned mode where its weighted error is the lowest,
unless that flips more texels of the alpha test (``encode_bc7``'s ``alpha_ref`` on its ``channel``, default alpha at
0.5) than the best of modes 6, 5 and 4: both candidates of such blocks are decoded and their tests compared.

Choices (the first three measured before the partitioned modes, on 256 x 256 images, four of each set of the
measured table of that time, RMS error per channel):

- Mode 6's p-bit: per endpoint the one whose rounded endpoint lies nearer. Trying the four p-bit pairs for the
  final endpoints lowered the error by 0.75 % at most (gradients 0.883 -> 0.877) for 52 % more time: not done
  (measured with modes 6 and 5 alone).
- The rotation of modes 5 and 4 (one for both): the one that leaves in the colour slot the three weighted channels
  nearest a line (the least scatter off their principal axis; ties: the lowest rotation). With modes 6 and 5 alone:
  rotation 0 alone gave RMS 0.923 on gradients, 8.08 on noise, 2.95 and 2.84 on cut-out cards; the rule 0.883,
  7.56, 2.68, 2.29; fitting all four rotations and keeping the best 0.879, 7.54, 2.68, 2.28 at 4.0 times
  ``core.bc.encode_bc3``'s time instead of 2.3. For mode 4 (weight 4): fitting all four rotations changes no
  total by more than 0.01 (noise 7.88 -> 7.87); rotation 0 alone is worse on noise (7.97) and on blob cards (2.25
  instead of 2.22).
- ``ALPHA_WEIGHT``: RMS of alpha | of all channels, by weight, with mode 4 (and with modes 6 and 5 alone):

  ===========================  ===========  ===========  ===========  ===========  ===========
  images                       modes 6, 5   weight 1     weight 2     weight 4     weight 8
  ===========================  ===========  ===========  ===========  ===========  ===========
  smooth gradients             0.96 | 0.87  0.95 | 0.87  0.76 | 0.89  0.58 | 0.95  0.45 | 1.03
  noise of sigma 12            7.50 | 7.59  7.31 | 7.42  3.86 | 7.64  2.40 | 7.88  2.05 | 7.99
  noise of sigma 8             6.21 | 5.66  6.21 | 5.53  3.96 | 5.73  2.28 | 6.10  1.62 | 6.32
  blob cards, black under      3.46 | 2.67  1.78 | 2.19  1.68 | 2.19  1.64 | 2.21  1.62 | 2.22
  blob cards, colour kept      1.30 | 2.28  1.41 | 2.18  1.12 | 2.19  0.98 | 2.22  0.91 | 2.25
  leaf cards                   1.18 | 0.80  0.83 | 0.61  0.77 | 0.62  0.70 | 0.66  0.66 | 0.70
  leaf cards, black under      2.47 | 1.30  1.13 | 0.75  1.11 | 0.75  1.10 | 0.76  1.10 | 0.77
  ===========================  ===========  ===========  ===========  ===========  ===========

  Weight 4: the smallest of 1, 2, 4 with alpha at most BC3's on the gradients and the leaf cards (at 32 x 32 and
  64 x 64 too: 8 leaf cards each, alpha 2.48 and 1.66 against BC3's 2.58 and 1.78; weight 2: 2.87 and 1.91); it
  costs colour (noise: R 7.5 -> 9.0, BC3 9.3) and the totals stay below BC3's on every set. Weight 8 loses the total
  on 32 x 32 leaf cards (2.80 against BC3's 2.55). Weight 4 also keeps the weighted errors exact integers in
  float32 (the channels are scaled by its square root, 2).

- Partitioned modes (RMS over the four channels of 512 x 512 crops; time of the whole encoder, 5.0, one run):
  modes 6, 5, 4 alone against all eight.

  ========================================  =============  ===============  ========
  image                                     modes 6, 5, 4  all eight modes  time
  ========================================  =============  ===============  ========
  ez-tree oak bark colour (opaque photo)    1.09           1.05 (-4 %)      x3.1
  ez-tree oak bark normal map               2.09           1.66 (-21 %)     x3.5
  ez-tree grass photo                       1.85           1.78 (-4 %)      x4.2
  ez-tree dirt photo                        1.22           1.18 (-3 %)      x3.5
  corpus oak leaf card (cut-out)            2.32           2.22 (-4 %)      x2.0
  corpus Jupiter map                        2.31           2.06 (-11 %)     x2.8
  ========================================  =============  ===============  ========

  The choices below were measured with every block fitted in the partitioned modes (``PARTITION_FROM`` 0) and
  without the alpha-test guard, as how much lower the RMS came out than with modes 6, 5, 4 alone (bark colour,
  bark normal map, Jupiter, leaf card, and a web page picture). The partition each block is fitted in: the summed
  scatter off each subset's principal axis, its largest eigenvalue estimated by one power step: 4.2, 21.0, 10.8,
  5.4, 15.1 % (on an opaque noisy 32 x 32 image, 0.5 to 3 % more error than the best of all partitions fitted one
  by one, modes 1, 3, 2, 0). Cheaper estimates chose worse: the scatter about each subset's mean alone (k-means'
  measure) 3.4, 11.7, 9.3, 3.4, 7.7 %; the scatter off the block's own axis 2.7, 13.7, 7.2, 1.0, 10.3 %.
  ``PARTITION_FROM``: 0 (every block), 16, 48, 100 and 200 gave 4.2/4.2/4.2/3.9/2.4 % on the bark colour and
  21.0/20.9/20.8/20.2/18.1 % on the normal map, at 4.0, 3.6, 2.6, 1.5 and 1.0 times the time on the bark (on the
  normal map: 4.1, 4.1, 3.5, 3.2, 2.4). Every partitioned mode adds something: without mode 1 the bark colour
  gains 0.7 % and the normal map 14.8 %, without mode 7 the leaf card 0.2 %, without 0, 2 or 3 up to 2.5 points
  less. One least-squares refinement instead of two lost 0.1 to 0.2 points for about 10 % of the time: the encoder
  keeps ``REFINE_STEPS`` for every mode.
- The alpha test kept: mode 7 trades alpha for colour in the weighted error, and on ez-tree's leaf cards (1024 x
  1024, level 0 of their chains) that flipped the alpha test at 0.5 on up to 4 times the texels of modes 6, 5 and 4
  (pine 1462 against 1445, aspen 537 against 222, ash 238 against 65, oak 335 against 261). With the guard: 1399,
  132, 39 and 222, fewer than modes 6, 5 and 4 on all four (a block takes a partitioned mode only where it flips
  no more texels), colour RMS 3.44, 2.77, 2.25 and 2.23 against 3.53, 3.40, 2.56 and 2.35, alpha RMS within 0.2.

Measured against ``core.bc.encode_bc3`` (RMS per channel R, G, B, A | all channels, four 256 x 256 images each;
flips: texels whose alpha test at 128 (alpha >= 128 or not) the codec changes, over the four images; the last
column: all channels with modes 6, 5 and 4 alone):

=======================================  ===========================  ===========================  ===========  =====
images                                   BC7                          BC3                          flips 7 | 3  6,5,4
=======================================  ===========================  ===========================  ===========  =====
smooth gradients (turned 0 to 3 times)   0.99 1.13 0.84 0.77 | 0.94   1.28 1.04 1.12 1.48 | 1.24   1200 | 2376  0.94
noise of sigma 12 on smooth fields       9.22 9.08 9.76 2.75 | 8.22   9.82 9.64 10.21 1.80 | 8.61  3776 | 2922  8.30
the same, sigma 8 (tests' ``natural``)   6.72 6.64 7.10 2.38 | 6.03   7.47 7.42 7.54 1.30 | 6.51   3572 | 2317  6.10
the same, opaque                         4.22 4.00 4.74 0.00 | 3.75   7.47 7.42 7.54 0.00 | 6.48      0 | 0     4.01
blob cards (``test_mips.blobs``: noisy   4.68 2.86 2.47 2.39 | 3.24   7.79 4.64 4.52 1.31 | 5.11    377 | 361   3.56
red), black where alpha is 0
the same, colour kept under alpha 0      5.23 1.03 1.35 1.74 | 2.88   16.78 1.00 2.50 1.31 | 8.52   371 | 361   2.88
leaf cards (``mips.make_leaf_card``)     0.45 0.90 0.40 0.69 | 0.64   2.84 1.20 2.88 0.92 | 2.16     22 | 88    0.66
the same, black where alpha is 0         0.45 0.76 0.49 1.05 | 0.73   0.83 0.92 0.99 0.92 | 0.92     18 | 88    0.76
=======================================  ===========================  ===========================  ===========  =====

Alpha: better than BC3's on the gradients and the leaf cards, worse on noise and on the blob cards (modes 4-7 give
alpha 8 levels of its own at most, 4 in modes 5 and 7, or a share of 16 with the colour; BC3 8 of its own with 8-bit
endpoints); on leaf cards with black under their transparent texels BC3's alpha was nearer with modes 6, 5, 4
alone (1.10 against 0.92: edge blocks hold alpha 0, 255 and values between, BC3's 6-value alpha mode keeps 0 and
255 exact, mode 4 has 8 even levels), and the subsets of mode 7 bring it to 1.05. The alpha test at 128 flips 4 to
5 times fewer texels than BC3's on leaf cards, half on the gradients, about as many on the blob cards, more on
noise. On black-under leaf cards of 32 x 32 and 64 x 64 the total lost to BC3 with modes 6, 5 and 4 (2.74 and 1.88
against 2.61 and 1.84, 8 cards each; at 128 x 128 1.17 against 1.25).

Speed (one run, 5.0): 3.1 to 4.2 times modes 6, 5 and 4's time on opaque photos (table above), 2.0 to 2.8 on cards
and maps with alpha, 1.6 on smooth gradients (few blocks above ``PARTITION_FROM``); the DDS of a 2048 x 2048 leaf
card's chain (``benchmarks/bench_mips.py``'s card, drawn at full size; with its coverage check, on 2 threads) took 1.14
to 1.40 times as long with the partitioned modes as without (4 alternating rounds: 6.6 to 7.2 times the chain's
build with them, 4.9 to 6.0 without). Modes 6, 5 and 4 alone took 3.0 to 3.9
times ``encode_bc3``'s time on a noisy 1024 x 1024 image, 1.8 to 2.1 on a leaf card (median of 5 interleaved rounds,
numpy 1.26 and 2.4); peak memory below BC3's (35 and 13 MiB against 51).
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from . import bc
from .bc import _check_image, _from_blocks, _principal_axis, _to_blocks

BLOCK_BYTES = bc.FORMATS["BC7"]  # bytes per 4x4 block
# the modes the encoder fits (tests fit one at a time), and the weight of alpha's squared error against a colour
# channel's in the fits and in the choice of mode (see the module's docstring)
ENCODER_MODES = (6, 5, 4, 7, 1, 3, 2, 0)
ALPHA_WEIGHT = 4.0
# least-squares refinements of the endpoints after the range fit (0: range fit only; tests compare the two)
REFINE_STEPS = 2
CHUNK_BLOCKS = 16384  # blocks encoded or decoded at once: bounds the temporaries to some tens of MB
# the partitioned modes (those of ENCODER_MODES with 2 or 3 subsets) are fitted to the blocks whose best error in
# the other modes is above this (weighted squared error of the block), each in the partition whose subsets lie
# nearest a line each (_partition_scatter)
PARTITION_FROM = 48.0
PARTITION_SCORE_BLOCKS = 2048  # blocks whose partitions are scored at once (temporaries: some tens of MB)


class _Mode(NamedTuple):
    subsets: int
    partition_bits: int
    rotation_bits: int
    selector_bits: int
    colour_bits: int
    alpha_bits: int
    endpoint_pbits: bool  # one p-bit per endpoint
    subset_pbits: bool  # one p-bit per subset, shared by its two endpoints
    index_bits: int
    index2_bits: int  # the second index set of modes 4 and 5 (0: none)


MODES = (
    _Mode(3, 4, 0, 0, 4, 0, True, False, 3, 0),
    _Mode(2, 6, 0, 0, 6, 0, False, True, 3, 0),
    _Mode(3, 6, 0, 0, 5, 0, False, False, 2, 0),
    _Mode(2, 6, 0, 0, 7, 0, True, False, 2, 0),
    _Mode(1, 0, 2, 1, 5, 6, False, False, 2, 3),
    _Mode(1, 0, 2, 0, 7, 8, False, False, 2, 2),
    _Mode(1, 0, 0, 0, 7, 7, True, False, 4, 0),
    _Mode(2, 6, 0, 0, 5, 5, True, False, 2, 0),
)

WEIGHTS = {2: np.array([0, 21, 43, 64], dtype=np.int32),
           3: np.array([0, 9, 18, 27, 37, 46, 55, 64], dtype=np.int32),
           4: np.array([0, 4, 9, 13, 17, 21, 26, 30, 34, 38, 43, 47, 51, 55, 60, 64], dtype=np.int32)}

# the subset of texels 0..15 (row by row) for each of the 64 partitions
_PARTITIONS2 = (
    "0011001100110011", "0001000100010001", "0111011101110111", "0001001100110111", "0000000100010011",
    "0011011101111111", "0001001101111111", "0000000100110111", "0000000000010011", "0011011111111111",
    "0000000101111111", "0000000000010111", "0001011111111111", "0000000011111111", "0000111111111111",
    "0000000000001111", "0000100011101111", "0111000100000000", "0000000010001110", "0111001100010000",
    "0011000100000000", "0000100011001110", "0000000010001100", "0111001100110001", "0011000100010000",
    "0000100010001100", "0110011001100110", "0011011001101100", "0001011111101000", "0000111111110000",
    "0111000110001110", "0011100110011100", "0101010101010101", "0000111100001111", "0101101001011010",
    "0011001111001100", "0011110000111100", "0101010110101010", "0110100101101001", "0101101010100101",
    "0111001111001110", "0001001111001000", "0011001001001100", "0011101111011100", "0110100110010110",
    "0011110011000011", "0110011010011001", "0000011001100000", "0100111001000000", "0010011100100000",
    "0000001001110010", "0000010011100100", "0110110010010011", "0011011011001001", "0110001110011100",
    "0011100111000110", "0110110011001001", "0110001100111001", "0111111010000001", "0001100011100111",
    "0000111100110011", "0011001111110000", "0010001011101110", "0100010001110111")
_PARTITIONS3 = (
    "0011001102212222", "0001001122112221", "0000200122112211", "0222002200110111", "0000000011221122",
    "0011001100220022", "0022002211111111", "0011001122112211", "0000000011112222", "0000111111112222",
    "0000111122222222", "0012001200120012", "0112011201120112", "0122012201220122", "0011011211221222",
    "0011200122002220", "0001001101121122", "0111001120012200", "0000112211221122", "0022002200221111",
    "0111011102220222", "0001000122212221", "0000001101220122", "0000110022102210", "0122012200110000",
    "0012001211222222", "0110122112210110", "0000011012211221", "0022110211020022", "0110011020022222",
    "0011012201220011", "0000200022112221", "0000000211221222", "0222002200120011", "0011001200220222",
    "0120012001200120", "0000111122220000", "0120120120120120", "0120201212010120", "0011220011220011",
    "0011112222000011", "0101010122222222", "0000000021212121", "0022112200221122", "0022001100220011",
    "0220122102201221", "0101222222220101", "0000212121212121", "0101010101012222", "0222011102220111",
    "0002111200021112", "0000211221122112", "0222011101110222", "0002111211120002", "0110011001102222",
    "0000000021122112", "0110011022222222", "0022001100110022", "0022112211220022", "0000000000002112",
    "0002000100020001", "0222122202221222", "0101222222222222", "0111201122012220")
# anchor texel of subset 1 (2 subsets), of subsets 1 and 2 (3 subsets); subset 0's anchor is always texel 0
_ANCHORS2 = (15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 2, 8, 2, 2, 8, 8, 15, 2, 8, 2, 2,
             8, 8, 2, 2, 15, 15, 6, 8, 2, 8, 15, 15, 2, 8, 2, 2, 2, 15, 15, 6, 6, 2, 6, 8, 15, 15, 2, 2, 15, 15, 15,
             15, 15, 2, 2, 15)
_ANCHORS3_1 = (3, 3, 15, 15, 8, 3, 15, 15, 8, 8, 6, 6, 6, 5, 3, 3, 3, 3, 8, 15, 3, 3, 6, 10, 5, 8, 8, 6, 8, 5, 15,
               15, 8, 15, 3, 5, 6, 10, 8, 15, 15, 3, 15, 5, 15, 15, 15, 15, 3, 15, 5, 5, 5, 8, 5, 10, 5, 10, 8, 13,
               15, 12, 3, 3)
_ANCHORS3_2 = (15, 8, 8, 3, 15, 15, 3, 8, 15, 15, 15, 15, 15, 15, 15, 8, 15, 8, 15, 3, 15, 8, 15, 8, 3, 15, 6, 10,
               15, 15, 10, 8, 15, 3, 15, 10, 10, 8, 9, 10, 6, 15, 8, 15, 3, 6, 6, 8, 15, 3, 15, 15, 15, 15, 15, 15,
               15, 15, 15, 15, 3, 15, 15, 8)
# by subset count: (partitions, 16) subset of every texel; (partitions, subsets) anchor texel of every subset
SUBSETS = {1: np.zeros((1, 16), dtype=np.intp),
           2: np.array([[int(c) for c in p] for p in _PARTITIONS2], dtype=np.intp),
           3: np.array([[int(c) for c in p] for p in _PARTITIONS3], dtype=np.intp)}
ANCHORS = {1: np.zeros((1, 1), dtype=np.intp),
           2: np.array([(0, a) for a in _ANCHORS2], dtype=np.intp),
           3: np.array(list(zip([0] * 64, _ANCHORS3_1, _ANCHORS3_2)), dtype=np.intp)}
# mode 5's rotation r: the channel order of the texels the encoder fits (the decoder's swap of alpha with red,
# green or blue undone): colour slot first, then the alpha slot
ROTATION_ORDERS = ((0, 1, 2, 3), (3, 1, 2, 0), (0, 3, 2, 1), (0, 1, 3, 2))


# --- sizes and validation ------------------------------------------------------------------------------------

def _check_data(data: bytes | bytearray | memoryview, height: int, width: int) -> None:
    """What a caller of ``decode_bc7`` can get wrong: data that is not bytes-like, sizes that are not integers;
    then ``core.bc._check_data``'s rule (sizes at least 1, ``core.bc.block_bytes("BC7", ...)`` bytes)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ValueError(f"BC7 data must be bytes, got {type(data).__name__}: pass what encode_bc7 returned")
    if not (isinstance(height, numbers.Integral) and isinstance(width, numbers.Integral)):
        raise ValueError(f"image size {height!r}x{width!r}: height and width must be integers")
    bc._check_data(memoryview(data).cast("B"), "BC7", height, width)  # (a byte view: its len() counts bytes)


# --- decoder -------------------------------------------------------------------------------------------------

def _fields(bits: npt.NDArray[np.uint8], pos: int, count: int, width: int) -> npt.NDArray[np.int32]:
    """(n, count) unsigned fields of ``width`` bits, one after the other from bit ``pos`` of (n, 128) bits."""
    chunk = bits[:, pos:pos + count * width].reshape(len(bits), count, width).astype(np.int32)
    return chunk @ (1 << np.arange(width, dtype=np.int32))


@functools.lru_cache(maxsize=None)
def _index_layout(subsets: int, width: int, pos: int) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.uint8]]:
    """Where the indices of ``width`` bits from bit ``pos`` lie, per partition of ``subsets`` subsets (each
    subset's anchor texel stores one bit less): (partitions, 16 * width) bit numbers, texel by texel, bit by bit (a
    missing top bit reads the last bit of the block), and (partitions, 16 * width) 1 for a stored bit, 0 for a
    missing top bit."""
    anchors = ANCHORS[subsets]
    anchor = (np.arange(16)[None, None, :] == anchors[:, :, None]).any(axis=1)  # (partitions, 16)
    widths = width - anchor.astype(np.intp)
    starts = np.cumsum(widths, axis=1) - widths
    bit = np.arange(width)
    offsets = np.minimum(pos + starts[..., None] + bit, 127).reshape(len(anchors), -1)
    stored = (bit < widths[..., None]).astype(np.uint8).reshape(len(anchors), -1)
    offsets.flags.writeable = stored.flags.writeable = False
    return offsets, stored


def _read_indices(bits: npt.NDArray[np.uint8], pos: int, width: int, subsets: int,
                  partition: npt.NDArray[np.integer]) -> npt.NDArray[np.uint8]:
    """(n, 16) indices of ``width`` bits from bit ``pos``, laid out for each block's partition of ``subsets``
    subsets (``_index_layout``)."""
    offsets, stored = _index_layout(subsets, width, pos)
    got = bc.take_rows(bits, offsets[partition])
    got *= stored[partition]
    got = got.reshape(len(bits), 16, width)
    idx = got[..., 0].copy()
    for b in range(1, width):
        idx |= got[..., b] << b
    return idx


def _unquantise(v: npt.NDArray[np.int32], bits: int) -> npt.NDArray[np.int32]:
    """``bits``-bit values -> 8 bits by bit replication."""
    v = v << (8 - bits)
    return v | (v >> bits)


def _decode_mode(bits: npt.NDArray[np.uint8], m: int) -> npt.NDArray[np.uint8]:
    """(n, 16, 4) RGBA texels of (n, 128) bits of blocks all in mode ``m``."""
    mode = MODES[m]
    n = len(bits)
    pos = m + 1
    partition = _fields(bits, pos, 1, mode.partition_bits)[:, 0]
    pos += mode.partition_bits
    rotation = _fields(bits, pos, 1, mode.rotation_bits)[:, 0]
    pos += mode.rotation_bits
    selector = _fields(bits, pos, 1, mode.selector_bits)[:, 0].astype(bool)
    pos += mode.selector_bits
    ends = 2 * mode.subsets
    e = np.full((n, ends, 4), 255, dtype=np.int32)
    for c, width in enumerate((mode.colour_bits,) * 3 + (mode.alpha_bits,)):
        e[:, :, c] = _fields(bits, pos, ends, width) if width else 255
        pos += ends * width
    channels = 4 if mode.alpha_bits else 3
    colour_bits, alpha_bits = mode.colour_bits, mode.alpha_bits
    if mode.endpoint_pbits or mode.subset_pbits:
        count = ends if mode.endpoint_pbits else mode.subsets
        p = np.repeat(_fields(bits, pos, count, 1), ends // count, axis=1)
        pos += count
        e[:, :, :channels] = (e[:, :, :channels] << 1) | p[..., None]
        colour_bits, alpha_bits = colour_bits + 1, alpha_bits + 1
    e[:, :, :3] = _unquantise(e[:, :, :3], colour_bits)
    if mode.alpha_bits:
        e[:, :, 3] = _unquantise(e[:, :, 3], alpha_bits)

    subset = SUBSETS[mode.subsets][partition]
    idx = _read_indices(bits, pos, mode.index_bits, mode.subsets, partition)
    colour_w = alpha_w = WEIGHTS[mode.index_bits][idx]
    if mode.index2_bits:
        pos += 16 * mode.index_bits - 1
        idx2 = _read_indices(bits, pos, mode.index2_bits, 1, np.zeros(len(bits), np.intp))
        second = WEIGHTS[mode.index2_bits][idx2]
        sel = selector[:, None]
        colour_w, alpha_w = np.where(sel, second, colour_w), np.where(sel, colour_w, second)
    e0 = bc.take_rows(e, 2 * subset)
    e1 = bc.take_rows(e, 2 * subset + 1)
    w = np.concatenate([np.repeat(colour_w[..., None], 3, axis=2), alpha_w[..., None]], axis=2)
    texels = ((64 - w) * e0 + w * e1 + 32) >> 6
    for r in (1, 2, 3):
        turned = rotation == r
        if turned.any():
            order = [0, 1, 2, 3]
            order[r - 1], order[3] = 3, r - 1
            texels[turned] = texels[turned][..., order]
    return texels.astype(np.uint8)


def _decode_blocks(raw: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """(n, 16, 4) RGBA texels of (n, 16) bytes of BC7 blocks."""
    bits = np.unpackbits(raw, axis=1, bitorder="little")
    head = bits[:, :8]
    mode = np.where(head.any(axis=1), head.argmax(axis=1), 8)
    texels = np.zeros((len(raw), 16, 4), dtype=np.uint8)  # mode 8 (reserved): transparent black
    for m in range(8):
        these = mode == m
        if these.any():
            texels[these] = _decode_mode(bits[these], m)
    return texels


def decode_bc7(data: bytes | bytearray | memoryview, height: int, width: int) -> npt.NDArray[np.uint8]:
    """(height, width, 4) uint8 RGBA of BC7 data (any of the modes 0-7; the reserved mode 8 decodes as
    transparent black, RGBA 0, 0, 0, 0)."""
    _check_data(data, height, width)
    raw = np.frombuffer(data, dtype=np.uint8).reshape(-1, BLOCK_BYTES)
    texels = np.empty((len(raw), 16, 4), dtype=np.uint8)

    def decode(start, stop):
        texels[start:stop] = _decode_blocks(raw[start:stop])

    bc.in_chunks(len(raw), CHUNK_BLOCKS, decode)
    return _from_blocks(texels, height, width)


# --- encoder: quantisers (float endpoints (n, 2, c) -> stored values (n, 2, k) and 8-bit values (n, 2, c)) -----

def _quantise_mode6(ends: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """Mode 6 endpoints: stored (n, 2, 5) = 7-bit R, G, B, A and the p-bit; 8-bit (n, 2, 4) = ``(v << 1) | p``.
    Per endpoint the p-bit whose rounded endpoint lies nearer (squared RGBA distance; ties: 0)."""
    e = np.clip(ends, 0.0, 255.0)
    v0 = np.clip(np.rint(e * 0.5), 0, 127).astype(np.int32)
    v1 = np.clip(np.rint((e - 1.0) * 0.5), 0, 127).astype(np.int32)
    d0 = ((e - 2 * v0) ** 2).sum(axis=2)
    d1 = ((e - (2 * v1 + 1)) ** 2).sum(axis=2)
    p = (d1 < d0).astype(np.int32)
    v = np.where(p[..., None] == 1, v1, v0)
    return np.concatenate([v, p[..., None]], axis=2), (v << 1) | p[..., None]


def _replicating(bits: int) -> Callable:
    """The quantiser of ``bits``-bit endpoints widened by bit replication (modes 4 and 5): the nearest level of
    every channel. The midpoints between levels are multiples of 1/2, so the level of a value is that of its half
    (a table of 511 halves; a value on a midpoint takes the upper level)."""
    levels = _unquantise(np.arange(1 << bits, dtype=np.int32), bits)
    halves = np.arange(511, dtype=np.float64) / 2.0 + 0.25
    table = np.abs(levels[None, :] - halves[:, None]).argmin(axis=1).astype(np.int32)

    def quantise(ends: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
        v = table[(np.clip(ends, 0.0, 255.0) * 2.0).astype(np.intp)]
        return v, levels[v]
    return quantise


_quantise5, _quantise6, _quantise7 = _replicating(5), _replicating(6), _replicating(7)


def _pbit_quantiser(bits: int, shared: bool) -> Callable:
    """The quantiser of ``bits``-bit endpoints with p-bits (modes 0, 1, 3 and 7): each channel's stored value ``v``
    and the p-bit make the ``bits + 1``-bit value ``(v << 1) | p``, widened to 8 bits by bit replication. Per
    endpoint (``shared``: per pair of endpoints, mode 1's p-bit of a subset) the p-bit whose nearest levels lie
    nearer (squared distance over the channels; ties: 0). Returns stored (n, 2, c + 1) = the values and the
    p-bit, and the 8-bit endpoints (n, 2, c)."""
    total = bits + 1
    levels = _unquantise(np.arange(1 << total, dtype=np.int32), total)
    halves = np.arange(511, dtype=np.float64) / 2.0 + 0.25
    tables = []
    for p in (0, 1):
        by_v = levels[p::2]  # the 8-bit level of stored value v with this p-bit
        tables.append((np.abs(by_v[None, :] - halves[:, None]).argmin(axis=1).astype(np.int32), by_v))

    def quantise(ends: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
        e = np.clip(ends, 0.0, 255.0)
        h = (e * 2.0).astype(np.intp)
        (v0, v1) = (tables[0][0][h], tables[1][0][h])
        (u0, u1) = (tables[0][1][v0], tables[1][1][v1])
        d0, d1 = ((e - u0) ** 2).sum(axis=2), ((e - u1) ** 2).sum(axis=2)  # (n, 2)
        if shared:
            d0, d1 = np.repeat(d0.sum(axis=1, keepdims=True), 2, axis=1), np.repeat(d1.sum(axis=1, keepdims=True),
                                                                                   2, axis=1)
        p = (d1 < d0)[..., None]
        return (np.concatenate([np.where(p, v1, v0), p.astype(np.int32)], axis=2), np.where(p, u1, u0))
    return quantise


_quantise4p, _quantise6s, _quantise7p, _quantise5p = (_pbit_quantiser(4, False), _pbit_quantiser(6, True),
                                                      _pbit_quantiser(7, False), _pbit_quantiser(5, False))


def _quantise8(ends: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """8-bit endpoints (mode 5's alpha): rounded."""
    v = np.clip(np.rint(ends), 0, 255).astype(np.int32)
    return v, v


# --- encoder: fits -------------------------------------------------------------------------------------------

def _nearest(xt: npt.NDArray[np.float32], u: npt.NDArray[np.int32], weights: npt.NDArray[np.int32],
             root: npt.NDArray[np.float32] | None, mask: npt.NDArray[np.float32] | None = None
             ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32]]:
    """Index of the nearest palette entry (weighted squared error over the channels; ties: the lower index) of
    every texel, and each block's weighted squared error (over the texels of ``mask`` (n, 16), 1 or 0, when
    given). ``xt`` (c, n, 16) texels channel by channel, each times ``root`` (c, n), the square root of its weight
    in each block (None: 1); ``u`` (n, 2, c) 8-bit endpoints. The palette is the decoder's, so the error is the
    decoded block's (exact: integers in float32 for weights 1 and 4)."""
    w = weights[None, :, None]
    palette = ((64 - w) * u[:, :1] + w * u[:, 1:] + 32) >> 6  # (n, K, c)
    palette = np.ascontiguousarray(palette.transpose(2, 1, 0), dtype=np.float32)  # (c, K, n)
    if root is not None:
        palette *= root[:, None, :]
    if len(xt) == 1:
        return _nearest_1d(xt[0], palette[0], mask)
    idx = np.zeros(xt.shape[1:], dtype=np.uint8)
    best = np.full(xt.shape[1:], np.inf, dtype=np.float32)
    d = np.empty_like(best)
    t = np.empty_like(best)
    nearer = np.empty(best.shape, dtype=np.bool_)
    for k in range(len(weights)):
        np.subtract(xt[0], palette[0, k][:, None], out=d)
        d *= d
        for c in range(1, len(xt)):
            np.subtract(xt[c], palette[c, k][:, None], out=t)
            t *= t
            d += t
        np.less(d, best, out=nearer)
        np.putmask(idx, nearer, k)
        np.minimum(best, d, out=best)
    if mask is not None:
        best *= mask
    return idx, best.sum(axis=1)


def _nearest_1d(x: npt.NDArray[np.float32], palette: npt.NDArray[np.float32],
                mask: npt.NDArray[np.float32] | None = None) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32]]:
    """``_nearest`` of one channel, (n, 16) values and a (K, n) palette: the palette runs one way (the weights
    rise), so a value's index is the number of midpoints between neighbouring entries that it has passed (strictly:
    ties take the lower index)."""
    sign = np.where(palette[-1] < palette[0], -1.0, 1.0).astype(np.float32)[:, None]
    xs = x * sign
    mids = (palette[1:] + palette[:-1]) * 0.5 * sign.T  # (K - 1, n)
    idx = np.zeros(x.shape, dtype=np.uint8)
    for mid in mids:
        idx += xs > mid[:, None]
    d = x - np.take_along_axis(palette.T, idx.astype(np.intp), axis=1)
    d *= d
    if mask is not None:
        d *= mask
    return idx, d.sum(axis=1)


def _least_squares(x: npt.NDArray[np.float32], f: npt.NDArray[np.float32],
                   mask: npt.NDArray[np.float32] | None = None
                   ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
    """(n, 2, c) endpoints minimising the squared error of ``(1 - f) e0 + f e1`` against ``x`` (n, 16, c) (channel
    by channel, so whatever the channels' weights; over the texels of ``mask`` (n, 16), 1 or 0, when given), and
    whether the indices use both endpoints (else the solution is not unique: the block keeps what it has)."""
    a = 1.0 - f
    am, fm = (a, f) if mask is None else (a * mask, f * mask)
    aa, ab, bb = (am * a).sum(axis=1), (am * f).sum(axis=1), (fm * f).sum(axis=1)
    ax = np.matmul(am[:, None, :], x)[:, 0]
    bx = np.matmul(fm[:, None, :], x)[:, 0]
    det = aa * bb - ab * ab
    ok = det > 1e-6 * np.maximum(aa * bb, 1e-30)
    safe = np.where(ok, det, 1.0)[:, None]
    e0 = (bb[:, None] * ax - ab[:, None] * bx) / safe
    e1 = (aa[:, None] * bx - ab[:, None] * ax) / safe
    return np.stack([e0, e1], axis=1), ok


class _Fit(NamedTuple):
    code: npt.NDArray[np.int32]  # (n, 2, k) stored endpoint values
    idx: npt.NDArray[np.uint8]  # (n, 16)
    err: npt.NDArray[np.float32]  # (n,) weighted squared error of the decoded block over the fitted channels


def _covariance(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """(n, c, c) scatter matrices (covariance times 16) of (n, 16, c) texels."""
    d = x - x.mean(axis=1, keepdims=True)
    return np.matmul(d.transpose(0, 2, 1), d)


def _fit(x: npt.NDArray[np.float32], bits: int, quantise: Callable, axis: npt.NDArray[np.float32] | None = None,
         weight: npt.NDArray[np.float32] | None = None, mask: npt.NDArray[np.float32] | None = None) -> _Fit:
    """Endpoints and ``bits``-bit indices of (n, 16, c) texels whose channels weigh ``weight`` (n, c) in the
    squared error (None: 1 each): range fit on the principal axis of the weighted texels (``axis``, (n, c), when
    the caller has it; it is the axis of ``x * sqrt(weight)``), then ``REFINE_STEPS`` least-squares refinements;
    each block keeps its best. ``mask`` (n, 16), 1 or 0 (at least one 1 a block): fit the texels of one subset
    only (the other texels' indices are of no use; the error counts the subset's)."""
    weights = WEIGHTS[bits]
    if mask is None:
        mean = x.mean(axis=1)
    else:
        mean = np.matmul(mask[:, None, :], x)[:, 0] / mask.sum(axis=1)[:, None]
    d = x - mean[:, None, :]
    root = np.ones((len(x), x.shape[2]), dtype=np.float32) if weight is None else np.sqrt(weight)
    if axis is None:
        if x.shape[2] == 1:
            axis = np.ones((len(x), 1), dtype=np.float32)
        elif mask is None:
            axis = _principal_axis(_covariance(x))
        else:  # the axis of the subset's weighted texels
            dw = d * root[:, None, :]
            axis = _principal_axis(np.matmul((dw * mask[..., None]).transpose(0, 2, 1), dw))
    # the line through the mean along the weighted axis a, in the texels' units: direction a / root, and a texel's
    # place on it is its weighted projection d . (a root)
    t = np.matmul(d, (axis * root)[:, :, None])[..., 0]
    if mask is None:
        lo, hi = t.min(axis=1), t.max(axis=1)
    else:
        used = mask > 0
        lo, hi = np.where(used, t, np.inf).min(axis=1), np.where(used, t, -np.inf).max(axis=1)
    ends = mean[:, None, :] + np.stack([lo, hi], axis=1)[..., None] * (axis / root)[:, None]
    rt = None if weight is None else np.ascontiguousarray(root.T)
    xt = np.ascontiguousarray(x.transpose(2, 0, 1)) if rt is None else x.transpose(2, 0, 1) * rt[:, :, None]
    code, u = quantise(ends)
    idx, err = _nearest(xt, u, weights, rt, mask)
    fraction = weights.astype(np.float32) / 64.0
    for _ in range(REFINE_STEPS):
        ends, ok = _least_squares(x, fraction[idx], mask)
        r_code, r_u = quantise(ends)
        r_idx, r_err = _nearest(xt, r_u, weights, rt, mask)
        better = ok & (r_err < err)
        code = np.where(better[:, None, None], r_code, code)
        idx = np.where(better[:, None], r_idx, idx)
        err = np.where(better, r_err, err)
    return _Fit(code, idx, err)


def _anchor_rule(fit: _Fit, bits: int) -> _Fit:
    """Swap the endpoints and invert the indices (``top - i``) of blocks whose texel-0 index has its top bit
    set: the same decode, and the anchor's top bit (not stored) is 0."""
    top = (1 << bits) - 1
    flip = fit.idx[:, 0] > top // 2
    code = np.where(flip[:, None, None], fit.code[:, ::-1], fit.code)
    idx = np.where(flip[:, None], top - fit.idx, fit.idx).astype(np.uint8)
    return _Fit(code, idx, fit.err)


def _pick(these: npt.NDArray[np.bool_], a: _Fit, b: _Fit) -> _Fit:
    """Per block ``a`` where ``these``, else ``b``."""
    return _Fit(np.where(these[:, None, None], a.code, b.code), np.where(these[:, None], a.idx, b.idx),
                np.where(these, a.err, b.err))


@functools.cache
def _one_colour_table() -> npt.NDArray[np.int32]:
    """(256, 2) 7-bit endpoints ``v0, v1`` of mode 5's colour with ``(43 u0 + 21 u1 + 32) >> 6`` (index 1) equal
    to each 8-bit value (``u`` the widened levels); of the exact pairs, the one with the nearest levels."""
    u = _unquantise(np.arange(128, dtype=np.int32), 7)
    value = (43 * u[:, None] + 21 * u[None, :] + 32) >> 6  # (128, 128)
    spread = np.abs(u[:, None] - u[None, :])
    table = np.empty((256, 2), dtype=np.int32)
    for c in range(256):
        table[c] = np.unravel_index(int(np.where(value == c, spread, 1 << 20).argmin()), value.shape)
    assert (value[table[:, 0], table[:, 1]] == np.arange(256)).all()
    return table


class _Rotated(NamedTuple):
    """Modes 4 and 5's view of the blocks: the rotation, the texels in slot order (colour slot, then the alpha
    slot), the principal axis of the weighted colour slot and the slots' weights."""
    rotation: npt.NDArray[np.intp]  # (n,)
    x: npt.NDArray[np.float32]  # (n, 16, 4)
    axis: npt.NDArray[np.float32]  # (n, 3)
    weight: npt.NDArray[np.float32]  # (n, 4)


def _rotate(x: npt.NDArray[np.float32], cov: npt.NDArray[np.float32], weight: npt.NDArray[np.float32]
            ) -> _Rotated:
    """The rotation of (n, 16, 4) texels whose channels weigh ``weight`` (4,) (``cov``: the (n, 4, 4) scatter of the
    weighted texels): the one whose alpha slot takes the channel that leaves the other three (weighted) nearest a
    line (the least scatter off their principal axis; ties: the lowest rotation)."""
    residual, axes = [], []
    for order in ROTATION_ORDERS:
        sub = cov[:, order[:3]][:, :, order[:3]]
        axis = _principal_axis(sub)
        spread = (np.matmul(sub, axis[:, :, None])[..., 0] * axis).sum(axis=1)
        residual.append(np.trace(sub, axis1=1, axis2=2) - spread)
        axes.append(axis)
    rotation = np.argmin(np.stack(residual, axis=1), axis=1)
    order = np.array(ROTATION_ORDERS)[rotation]
    return _Rotated(rotation, np.take_along_axis(x, order[:, None, :], axis=2),
                    np.stack(axes, axis=1)[np.arange(len(x)), rotation], weight[order])


def _fit_mode5(rot: _Rotated) -> tuple[_Fit, _Fit]:
    """Mode 5 of the rotated blocks: the colour fit of the three channels in the colour slot and the 1-D fit of the
    channel in the alpha slot, the errors weighted. Blocks whose colour slot holds one colour get that colour's
    exact endpoints (index 1)."""
    colour = _fit(rot.x[..., :3], 2, _quantise7, rot.axis, rot.weight[:, :3])
    rgb = rot.x[..., :3]  # (the texels' 8-bit values, as floats)
    flat = (rgb == rgb[:, :1]).all(axis=(1, 2))
    if flat.any():
        code = colour.code.copy()
        code[flat] = _one_colour_table()[rgb[flat, 0].astype(np.intp)].transpose(0, 2, 1)
        colour = _Fit(code, np.where(flat[:, None], 1, colour.idx).astype(np.uint8), np.where(flat, 0, colour.err))
    return _anchor_rule(colour, 2), _anchor_rule(_fit(rot.x[..., 3:], 2, _quantise8, None, rot.weight[:, 3:]), 2)


def _fit_mode4(rot: _Rotated) -> tuple[_Fit, _Fit, npt.NDArray[np.bool_]]:
    """Mode 4 of the rotated blocks: the colour slot with 5-bit endpoints and the alpha slot with 6-bit endpoints,
    each fitted with 2- and 3-bit indices; per block the index selection (False: colour 2-bit, alpha 3-bit) with
    the lower weighted error (ties: False)."""
    fits = []
    for colour_bits, alpha_bits in ((2, 3), (3, 2)):
        colour = _fit(rot.x[..., :3], colour_bits, _quantise5, rot.axis, rot.weight[:, :3])
        alpha = _fit(rot.x[..., 3:], alpha_bits, _quantise6, None, rot.weight[:, 3:])
        fits.append((_anchor_rule(colour, colour_bits), _anchor_rule(alpha, alpha_bits)))
    (c0, a0), (c1, a1) = fits
    selector = c1.err + a1.err < c0.err + a0.err
    return _pick(selector, c1, c0), _pick(selector, a1, a0), selector


# --- encoder: partitioned modes ------------------------------------------------------------------------------

class _Parted(NamedTuple):
    """A partitioned mode's fit of n blocks."""
    partition: npt.NDArray[np.intp]  # (n,)
    code: npt.NDArray[np.int32]  # (n, subsets, 2, k) stored endpoint values (then the p-bit, in modes with them)
    idx: npt.NDArray[np.uint8]  # (n, 16), the anchor rule applied per subset
    err: npt.NDArray[np.float32]  # (n,) weighted squared error of the decoded block


# per partitioned mode: the quantiser of its endpoints (p-bits: ``_pbit_quantiser``)
_PARTITION_QUANTISERS = {0: _quantise4p, 1: _quantise6s, 2: _quantise5, 3: _quantise7p, 7: _quantise5p}


def _partition_scatter(xw: npt.NDArray[np.float32], subsets: int, count: int) -> npt.NDArray[np.float32]:
    """(n, count) estimated weighted squared error of a line fit to each subset, summed over the subsets, of (n, 16,
    c) weighted texels in each of the first ``count`` partitions of ``subsets`` subsets: per subset, the scatter off
    its principal axis, its scatter matrix's trace less its largest eigenvalue (estimated by the Rayleigh quotient
    one power step from the matrix's largest-variance column). Each subset's scatter matrix comes from its sums of
    the texels and of their products, all partitions in one matrix product (subset 0's: the block's less the other
    subsets'); blocks go ``PARTITION_SCORE_BLOCKS`` at a time to bound memory."""
    n, _, c = xw.shape
    table = SUBSETS[subsets][:count]
    masks = (table[:, None, :] == np.arange(1, subsets)[None, :, None]).reshape(-1, 16).astype(np.float32)
    counts = np.stack([(table == k).sum(axis=1) for k in range(subsets)], axis=1).astype(np.float32)[..., None]
    pairs = [(i, j) for i in range(c) for j in range(i, c)]
    scatter = np.empty((n, count), dtype=np.float32)
    for start in range(0, n, PARTITION_SCORE_BLOCKS):
        x = xw[start:start + PARTITION_SCORE_BLOCKS].transpose(1, 2, 0)  # (16, c, b)
        b = x.shape[2]
        features = np.concatenate([x, np.stack([x[:, i] * x[:, j] for i, j in pairs], axis=1)], axis=1)
        sums = np.empty((count, subsets, len(features[0]), b), dtype=np.float32)  # (partition, subset, feature, b)
        sums[:, 1:] = np.matmul(masks, features.reshape(16, -1)).reshape(count, subsets - 1, -1, b)
        np.subtract(features.sum(axis=0), sums[:, 1:].sum(axis=1), out=sums[:, 0])
        mean = sums[:, :, :c] / counts[..., None]
        m: list[list] = [[None] * c for _ in range(c)]  # the scatter matrices' entries, (partition, subset, b)
        for k, (i, j) in enumerate(pairs):
            m[i][j] = m[j][i] = sums[:, :, c + k] - sums[:, :, i] * mean[:, :, j]
        largest = np.argmax(np.stack([m[i][i] for i in range(c)]), axis=0)
        which = [largest == j for j in range(1, c)]
        v = []  # the largest-variance column
        for i in range(c):
            v.append(m[i][0])
            for j in range(1, c):
                v[i] = np.where(which[j - 1], m[i][j], v[i])
        vv = sum(v[i] * v[i] for i in range(c))
        vcv = sum(v[i] * sum(m[i][j] * v[j] for j in range(c)) for i in range(c))
        top = np.where(vv > 1e-12, vcv / np.maximum(vv, 1e-30), 0.0)
        residual = sum(m[i][i] for i in range(c)) - top  # (partition, subset, b)
        scatter[start:start + b] = residual.sum(axis=1).T
    return scatter


def _fit_partitioned(x: npt.NDArray[np.float32], weight: npt.NDArray[np.float32], partition: npt.NDArray[np.intp],
                     m: int) -> _Parted:
    """Mode ``m`` (0, 1, 2, 3 or 7) of (n, 16, 4) texels in the given partitions: each subset fitted on its own
    (``_fit`` with the subset's mask: its principal axis, range fit, refinements) with its channels weighing
    ``weight`` (4,); modes without alpha fit R, G, B (they decode alpha 255). The anchor rule per subset: a subset
    whose anchor's index has its top bit set is inverted and its endpoints swapped."""
    mode = MODES[m]
    n, s, bits = len(x), mode.subsets, mode.index_bits
    ch = 4 if mode.alpha_bits else 3
    sub = SUBSETS[s][partition]  # (n, 16)
    mask = (sub[:, None, :] == np.arange(s)[None, :, None]).reshape(n * s, 16)
    fit = _fit(np.repeat(x[..., :ch], s, axis=0), bits, _PARTITION_QUANTISERS[m], None,
               np.broadcast_to(weight[:ch], (n * s, ch)), mask.astype(np.float32))
    top = (1 << bits) - 1
    flip = fit.idx[np.arange(n * s), ANCHORS[s][partition].reshape(-1)] > top // 2
    code = np.where(flip[:, None, None], fit.code[:, ::-1], fit.code)
    idx = np.where(flip[:, None], top - fit.idx, fit.idx) * mask
    return _Parted(partition, code.reshape(n, s, 2, -1), idx.reshape(n, s, 16).sum(axis=1).astype(np.uint8),
                   fit.err.reshape(n, s).sum(axis=1))


def _partitioned_blocks(m: int, fit: _Parted) -> npt.NDArray[np.uint8]:
    """Blocks of partitioned mode ``m``: mode bits, partition, the endpoints channel by channel (per channel: subset
    0's endpoints 0 and 1, then subset 1's, ...), the p-bits (per endpoint, or per subset in mode 1), the indices
    (each subset's anchor texel with one bit less)."""
    mode = MODES[m]
    n, s, bits = len(fit.idx), mode.subsets, mode.index_bits
    ch = 4 if mode.alpha_bits else 3
    fields: list[tuple[npt.ArrayLike, int]] = [(1 << m, m + 1), (fit.partition, mode.partition_bits),
                                              (fit.code[..., :ch].transpose(0, 3, 1, 2), mode.colour_bits)]
    if mode.endpoint_pbits:
        fields.append((fit.code[..., ch], 1))
    elif mode.subset_pbits:
        fields.append((fit.code[:, :, 0, ch], 1))
    anchor = (np.arange(16)[None, None, :] == ANCHORS[s][fit.partition][:, :, None]).any(axis=1)  # (n, 16)
    every = ((fit.idx[..., None].astype(np.int32) >> np.arange(bits)) & 1).astype(np.uint8)  # (n, 16, bits)
    stored = np.arange(bits)[None, None, :] < (bits - anchor)[..., None]
    return _pack(fields, n, every[stored].reshape(n, 16 * bits - s))


def _write_partitioned(m: int, fit: _Parted, fitted: npt.NDArray[np.intp], these: npt.NDArray[np.bool_]
                       ) -> npt.NDArray[np.uint8]:
    """The blocks of ``these`` (all fitted: ``fitted`` lists the blocks of ``fit``) in mode ``m``."""
    pick = these[fitted]
    return _partitioned_blocks(m, _Parted(fit.partition[pick], fit.code[pick], fit.idx[pick], fit.err[pick]))


# --- encoder: blocks -----------------------------------------------------------------------------------------

def _pack(fields: list[tuple[npt.ArrayLike, int]], n: int, tail: npt.NDArray[np.uint8] | None = None
          ) -> npt.NDArray[np.uint8]:
    """(n, 16) bytes of blocks made of ``fields`` in order from bit 0: (values, bits each), the values (n, ...)
    per block or one number for every block; then the (n, k) bits of ``tail`` (a partitioned mode's indices, whose
    anchors, and so field widths, differ from block to block)."""
    if n == 0:
        return np.empty((0, BLOCK_BYTES), dtype=np.uint8)
    parts = []
    for values, width in fields:
        v = np.asarray(values, dtype=np.int64)
        v = v.reshape(n, -1) if v.ndim else np.full((n, 1), v, dtype=np.int64)
        parts.append(((v[..., None] >> np.arange(width)) & 1).reshape(n, -1).astype(np.uint8))
    if tail is not None:
        parts.append(tail)
    bits = np.concatenate(parts, axis=1)
    assert bits.shape[1] == 128
    return np.packbits(bits, axis=1, bitorder="little")


def _index_fields(idx: npt.ArrayLike, bits: int) -> list[tuple[npt.ArrayLike, int]]:
    """The fields of one index set: texel 0 (the anchor) with one bit less, then texels 1-15."""
    idx = np.asarray(idx)
    return [(idx[:, :1], bits - 1), (idx[:, 1:], bits)]


def _mode6_blocks(fit: _Fit) -> npt.NDArray[np.uint8]:
    """Mode 6 blocks: mode bits, R0 R1 G0 G1 B0 B1 A0 A1 (7 bits), P0 P1, indices (4 bits, texel 0's 3)."""
    ends = fit.code[:, :, :4].transpose(0, 2, 1)  # (n, channel, endpoint)
    return _pack([(1 << 6, 7), (ends, 7), (fit.code[:, :, 4], 1)] + _index_fields(fit.idx, 4), len(ends))


def _mode5_blocks(colour: _Fit, alpha: _Fit, rotation: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    """Mode 5 blocks: mode bits, rotation, R0 R1 G0 G1 B0 B1 (7 bits), A0 A1 (8 bits), colour indices, alpha
    indices (2 bits, texel 0's 1)."""
    return _pack([(1 << 5, 6), (rotation, 2), (colour.code.transpose(0, 2, 1), 7), (alpha.code[:, :, 0], 8)]
                 + _index_fields(colour.idx, 2) + _index_fields(alpha.idx, 2), len(colour.idx))


def _mode4_blocks(colour: _Fit, alpha: _Fit, rotation: npt.ArrayLike, selector: npt.NDArray[np.bool_]
                  ) -> npt.NDArray[np.uint8]:
    """Mode 4 blocks: mode bits, rotation, index selection, R0 R1 G0 G1 B0 B1 (5 bits), A0 A1 (6 bits), the 2-bit
    index set (colour's, or alpha's if ``selector``; texel 0's 1 bit), the 3-bit set (the other; texel 0's 2)."""
    sel = selector[:, None]
    return _pack([(1 << 4, 5), (rotation, 2), (selector, 1), (colour.code.transpose(0, 2, 1), 5),
                  (alpha.code[:, :, 0], 6)] + _index_fields(np.where(sel, alpha.idx, colour.idx), 2)
                 + _index_fields(np.where(sel, colour.idx, alpha.idx), 3), len(colour.idx))


def _one_colour_blocks(rgba: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """Mode 5 blocks that decode exactly to the (n, 4) colours: rotation 0, colour index 1 everywhere, alpha
    endpoints both the alpha, alpha index 0."""
    n = len(rgba)
    code = _one_colour_table()[rgba[:, :3]].transpose(0, 2, 1)  # (n, 2, 3)
    colour = _Fit(code, np.ones((n, 16), dtype=np.uint8), np.zeros(n, dtype=np.float32))
    alpha = _Fit(np.repeat(rgba[:, None, 3:].astype(np.int32), 2, axis=1), np.zeros((n, 16), dtype=np.uint8),
                 colour.err)
    return _mode5_blocks(colour, alpha, 0)


def _select(fit: _Fit, these: npt.NDArray[np.bool_]) -> _Fit:
    return _Fit(fit.code[these], fit.idx[these], fit.err[these])


def _write_mode6(six: _Fit, these: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint8]:
    return _mode6_blocks(_select(six, these))


def _write_mode5(colour: _Fit, alpha: _Fit, rotation: npt.NDArray[np.intp], these: npt.NDArray[np.bool_]
                 ) -> npt.NDArray[np.uint8]:
    return _mode5_blocks(_select(colour, these), _select(alpha, these), rotation[these])


def _write_mode4(colour: _Fit, alpha: _Fit, rotation: npt.NDArray[np.intp], selector: npt.NDArray[np.bool_],
                 these: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint8]:
    return _mode4_blocks(_select(colour, these), _select(alpha, these), rotation[these], selector[these])


def _assemble(writers: list[Callable[[npt.NDArray[np.bool_]], npt.NDArray[np.uint8]]], choice: npt.NDArray[np.intp],
              these: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint8]:
    """(count, 16) bytes of the blocks of ``these``, in order, each written by its ``writers[choice]``."""
    out = np.empty((int(these.sum()), BLOCK_BYTES), dtype=np.uint8)
    picked = choice[these]
    for k, write in enumerate(writers):
        mine = these & (choice == k)
        if mine.any():
            out[picked == k] = write(mine)
    return out


def _encode_blocks(blocks: npt.NDArray[np.uint8], alpha_ref: float | None = None, channel: int = 3
                   ) -> npt.NDArray[np.uint8]:
    """(n, 16) bytes of BC7 blocks of (n, 16, 4) RGBA texels: the modes of ``ENCODER_MODES`` fitted, each block
    written in the one with the lowest weighted error (ties: mode 6, then 5, then 4, then the partitioned modes in
    ``ENCODER_MODES``' order); blocks of one colour exactly. With ``alpha_ref``, a block keeps a partitioned mode
    only if it flips no more texels of the alpha test (``channel`` / 255 >= ``alpha_ref``) than the best of modes
    6, 5 and 4."""
    out = np.empty((len(blocks), BLOCK_BYTES), dtype=np.uint8)
    same = (blocks == blocks[:, :1]).all(axis=(1, 2))
    if same.any():
        out[same] = _one_colour_blocks(blocks[same, 0])
    if same.all():
        return out
    texels = blocks[~same]
    n = len(texels)
    x = texels.astype(np.float32)
    weight = np.array([1.0, 1.0, 1.0, ALPHA_WEIGHT], dtype=np.float32)
    root = np.sqrt(weight)
    cov = _covariance(x) * (root[:, None] * root[None, :])  # the scatter of the weighted texels
    errors: list[npt.NDArray[np.float32]] = []
    writers: list[Callable[[npt.NDArray[np.bool_]], npt.NDArray[np.uint8]]] = []
    if 6 in ENCODER_MODES:
        six = _anchor_rule(_fit(x, 4, _quantise_mode6, _principal_axis(cov), np.broadcast_to(weight, (n, 4))), 4)
        errors.append(six.err)
        writers.append(functools.partial(_write_mode6, six))
    if 5 in ENCODER_MODES or 4 in ENCODER_MODES:
        rot = _rotate(x, cov, weight)
        if 5 in ENCODER_MODES:
            colour, alpha = _fit_mode5(rot)
            errors.append(colour.err + alpha.err)
            writers.append(functools.partial(_write_mode5, colour, alpha, rot.rotation))
        if 4 in ENCODER_MODES:
            colour, alpha, selector = _fit_mode4(rot)
            errors.append(colour.err + alpha.err)
            writers.append(functools.partial(_write_mode4, colour, alpha, rot.rotation, selector))
    partitioned = [m for m in ENCODER_MODES if MODES[m].subsets > 1]
    singles = len(errors)
    if partitioned:
        # the blocks a single-subset mode leaves an error above PARTITION_FROM (all if none was fitted)
        worst = np.min(np.stack(errors), axis=0) if errors else np.full(n, np.inf, dtype=np.float32)
        candidates = worst > PARTITION_FROM
        # modes without alpha (0-3) decode alpha 255: fitted to opaque blocks only, unless no mode with alpha is
        # fitted (a test's choice of modes), when they take every block and their error counts alpha's
        alpha_modes = any(MODES[m].alpha_bits for m in ENCODER_MODES)
        no_alpha = candidates & (texels[..., 3] == 255).all(axis=1) if alpha_modes else candidates
        alpha_error = ((255.0 - x[..., 3]) ** 2).sum(axis=1) * weight[3]
        xw = x * root
        scatters: dict[int, npt.NDArray[np.float32]] = {}  # per subset count: _partition_scatter's estimates
        for m in partitioned:
            mode = MODES[m]
            if not mode.alpha_bits:
                fitted = np.flatnonzero(no_alpha)
            elif 3 in partitioned:  # mode 7 on blocks with alpha (on opaque ones mode 3's 8-bit endpoints win)
                fitted = np.flatnonzero(candidates & ~no_alpha)
            else:
                fitted = np.flatnonzero(candidates)
            err = np.full(n, np.inf, dtype=np.float32)
            if len(fitted):
                if mode.subsets not in scatters:  # (mode 0 takes the first 16 of mode 2's 64 partitions)
                    # the blocks modes 0-3 take (alpha 255) by the scatter of R, G, B; the others' (mode 7's,
                    # 2 subsets) of R, G, B, A
                    scatter = scatters[mode.subsets] = np.zeros((n, 64), dtype=np.float32)
                    scatter[no_alpha] = _partition_scatter(xw[no_alpha, :, :3], mode.subsets, 64)
                    if mode.subsets == 2:
                        rgba = candidates & ~no_alpha
                        scatter[rgba] = _partition_scatter(xw[rgba], 2, 64)
                chosen = scatters[mode.subsets][fitted, :1 << mode.partition_bits].argmin(axis=1)
                fit = _fit_partitioned(x[fitted], weight, chosen, m)
                err[fitted] = fit.err if mode.alpha_bits else fit.err + alpha_error[fitted]
                writers.append(functools.partial(_write_partitioned, m, fit, fitted))
            else:  # (never chosen: its errors are infinite)
                writers.append(lambda these: np.empty((0, BLOCK_BYTES), dtype=np.uint8))
            errors.append(err)
    choice = np.argmin(np.stack(errors), axis=0)
    if alpha_ref is not None and singles and len(errors) > singles:
        # the blocks in a partitioned mode whose test channel it may move (modes without alpha decode alpha 255,
        # exactly what they were given): decoded both ways, the alpha tests compared
        has_alpha = np.array([False] * singles + [bool(MODES[m].alpha_bits) for m in partitioned])
        check = (choice >= singles) & (has_alpha[choice] if channel == 3 else True)
        if check.any():
            single = np.argmin(np.stack(errors[:singles]), axis=0)
            given = texels[check, :, channel] >= alpha_ref * 255.0
            flips = [((_decode_blocks(_assemble(writers, c, check))[..., channel] >= alpha_ref * 255.0) != given
                      ).sum(axis=1) for c in (choice, single)]
            worse = np.flatnonzero(check)[flips[0] > flips[1]]
            choice[worse] = single[worse]
    out[~same] = _assemble(writers, choice, np.ones(n, dtype=np.bool_))
    return out


def encode_bc7(rgba: npt.NDArray[np.uint8], alpha_ref: float | None = 0.5, channel: int = 3) -> bytes:
    """BC7 blocks of an (H, W, 4) uint8 straight-alpha RGBA image: each block in whichever mode decodes nearest the
    image (squared error, alpha's weighing ``ALPHA_WEIGHT``; modes 5 and 4 with the rotation that suits the block,
    the partitioned modes in the partition that suits it, for blocks modes 6, 5 and 4 leave above
    ``PARTITION_FROM``); blocks of one colour exactly. The alpha test at ``alpha_ref`` (in (0, 1]; None: none) on
    ``channel`` (0..3: R, G, B or A, where an alpha-tested texture keeps its coverage) is kept: a block takes a
    partitioned mode only if that flips no more texels of the test than modes 6, 5 and 4 do.
    ``core.bc.block_bytes("BC7", H, W)`` bytes, blocks row by row (see the module's docstring)."""
    _check_image(rgba)
    if alpha_ref is not None and not (isinstance(alpha_ref, numbers.Real) and 0.0 < alpha_ref <= 1.0):
        raise ValueError(f"alpha_ref must be in (0, 1] (or None: no alpha test to keep), got {alpha_ref!r}")
    if channel not in (0, 1, 2, 3):
        raise ValueError(f"channel must be 0, 1, 2 or 3 (R, G, B or A), got {channel!r}")
    blocks = _to_blocks(rgba)
    out = np.empty((len(blocks), BLOCK_BYTES), dtype=np.uint8)

    def encode(start, stop):
        out[start:stop] = _encode_blocks(blocks[start:stop], alpha_ref, channel)

    bc.in_chunks(len(blocks), CHUNK_BLOCKS, encode)
    return out.tobytes()
