#!/usr/bin/env python3
"""Where a frame's bytes go: the fixed costs of small chunks (issue 30 item 3).

A benchmark program, not a test. For each FZM frame given (h5fz compress
writes them), prints one markdown row per stored buffer and a total line:

  - the frame header (docs/FORMAT.md section 1: fixed fields, stage records
    with their configs, stored sizes, two CRCs), and the largest stage config;
  - each stored buffer's size; when it is an ANS stream (cuszhi-cr's code
    groups since issue 30), its fixed parts: the head (n, method, run
    symbol), the two frequency tables and the lane records (6 bytes a lane;
    8 + 4 W for the interleaved stage, type 15);
    when it is an RZE stream holding a Huffman stream (cusz, and cuszhi-cr
    before the ANS stage), the fixed parts inside:
    the RZE size table, the Huffman header with its code-length table
    (5 bits per symbol between the smallest and largest coded symbol), and its
    block-end table (4 bytes per block), with the code count;
  - the share of the frame taken by the header and by the buffers that are
    not code groups (the spline's side stream: steps, anchors, outliers; a
    fill mask), which a small chunk pays whatever its codes cost. The fixed
    fields inside a code group are shown as decoded (before RZE, which
    shrinks the mostly-zero code-length table and the Huffman stream's zero
    bytes alike, so their stored share cannot be read off the bytes).

Usage: python3 tools/bench/frame_costs.py FRAME.fzm [FRAME.fzm ...]

The formats are read as docs/FORMAT.md defines them (FZM frame, RZE/RRE,
HUFFMAN, ANS); no engine code is used, so the figures are what the bytes say.
"""
import struct
import sys


def leb128(data, i):
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def parse_frame(data):
    """(header bytes, stage records [(type, config)], stored sizes) of an FZM frame."""
    if data[:4] != b"FZM\0":
        raise ValueError("not an FZM frame")
    header = struct.unpack_from("<I", data, 8)[0]
    rank = data[15]
    i = 16
    _, i = leb128(data, i)  # element size
    _, i = leb128(data, i)  # original size
    for _ in range(rank):
        _, i = leb128(data, i)
    stages, buffers = data[i], data[i + 1]
    i += 2
    records = []
    for _ in range(stages):
        type_id, inputs, _, config = struct.unpack_from("<HBBB", data, i)
        i += 5 + inputs
        records.append((type_id, data[i:i + config]))
        i += config
    sizes = []
    for _ in range(buffers):
        size, i = leb128(data, i)
        sizes.append(size)
    if i != header - 8:
        raise ValueError("frame header does not end where its size says")
    return header, records, sizes


def rze_decode(stream, word=1):
    """The decoded bytes of an RZE stream of `word`-byte words, and its size table's bytes."""
    n = struct.unpack_from("<Q", stream, 0)[0]
    count = -(-n // 16384)
    sub_sizes = struct.unpack_from("<%dH" % count, stream, 8)
    pos = 8 + 2 * count
    out = bytearray()
    for c in range(count):
        osize = min(16384, n - 16384 * c)
        sub = stream[pos:pos + sub_sizes[c]]
        pos += sub_sizes[c]
        if len(sub) == osize:
            out += sub
            continue
        words = osize // word
        levels = [-(-words // 8)]
        while levels[-1] > 8:
            levels.append(-(-levels[-1] // 8))
        q = levels[-1]
        bitmap = sub[:q]
        for level in range(len(levels) - 2, -1, -1):
            kept = sum(bin(x).count("1") for x in bitmap)
            kept_bytes = sub[q:q + kept]
            q += kept
            rebuilt, previous, k = bytearray(), 0, 0
            for j in range(levels[level]):
                if bitmap[j // 8] >> (j % 8) & 1:
                    previous = kept_bytes[k]
                    k += 1
                rebuilt.append(previous)
            bitmap = rebuilt
        for j in range(words):
            if bitmap[j // 8] >> (j % 8) & 1:
                out += sub[q:q + word]
                q += word
            else:
                out += bytes(word)
        out += sub[q:q + osize % word]
    if pos != len(stream) or len(out) != n:
        raise ValueError("not an RZE stream")
    return bytes(out), 8 + 2 * count


def huffman_fixed(stream):
    """(header and code-length bytes, block-end bytes, code count) of a Huffman stream."""
    n, alphabet, block = struct.unpack_from("<QII", stream, 0)
    if n == 0:
        return 17, 0, 0
    lo, hi = struct.unpack_from("<HH", stream, 17)
    if not (lo <= hi < alphabet and block > 0):
        raise ValueError("not a Huffman stream")
    head = 21 + -(-5 * (hi - lo + 1) // 8)
    head += (-head) % 4
    blocks = -(-n // block)
    if head + 4 * blocks > len(stream):
        raise ValueError("not a Huffman stream")
    return head, 4 * blocks, n


ANS_TYPE = 14
ANSI_TYPE = 15


class Bits:
    """LSB-first bit reader (docs/FORMAT.md, ANS tables)."""

    def __init__(self, data, start):
        self.data, self.bit = data, 8 * start

    def read(self):
        value = self.data[self.bit // 8] >> (self.bit % 8) & 1
        self.bit += 1
        return value

    def gamma(self):
        zeros = 0
        while self.read() == 0:
            zeros += 1
            if zeros > 40:
                raise ValueError("not an ANS table")
        value = 1
        for _ in range(zeros):
            value = value << 1 | self.read()
        return value


def ans_fixed(stream, lane_symbols):
    """(head bytes with both tables, lane-record bytes, symbol count) of an ANS stream."""
    n, i = leb128(stream, 0)
    if n == 0:
        return i, 0, 0
    method = stream[i]
    if method == 0:
        return i + 1, 0, n
    if method != 1:
        raise ValueError("not an ANS stream")
    bits = Bits(stream, i + 3)
    for _ in range(2):
        for _ in range(2 * (bits.gamma() - 1)):
            bits.gamma()
    head = -(-bits.bit // 8)
    head += (-head) % 4
    lanes = -(-n // lane_symbols)
    if head + 6 * lanes > len(stream):
        raise ValueError("not an ANS stream")
    return head, 6 * lanes, n


def ansi_fixed(stream):
    """(head bytes with both tables, lane-record bytes, symbol count) of an
    interleaved ANS stream (stage type 15): n, method, run symbol, cap C,
    states W, lane size S, the two tables, then K = ceil(n / S) lane records
    of 8 + 4 W bytes (pairs, words, W final states)."""
    n, i = leb128(stream, 0)
    if n == 0:
        return i, 0, 0
    method = stream[i]
    if method == 0:
        return i + 1, 0, n
    if method != 1:
        raise ValueError("not an ANSI stream")
    states = stream[i + 4]
    lane, i = leb128(stream, i + 5)
    if not (1 <= states <= 32 and 1 <= lane <= n):
        raise ValueError("not an ANSI stream")
    bits = Bits(stream, i)
    for _ in range(2):
        for _ in range(2 * (bits.gamma() - 1)):
            bits.gamma()
    head = -(-bits.bit // 8)
    head += (-head) % 4
    records = -(-n // lane) * (8 + 4 * states)
    if head + records > len(stream):
        raise ValueError("not an ANSI stream")
    return head, records, n


def report(path):
    data = open(path, "rb").read()
    header, records, sizes = parse_frame(data)
    largest = max((len(config) for _, config in records), default=0)
    print(f"\n{path}: {len(data)} bytes\n")
    print("| part | stored bytes | kind | what |")
    print("|---|---|---|---|")
    print(f"| frame header | {header} | fixed | {len(records)} stage records, largest config {largest} bytes |")
    # The stages whose outputs are stored, in buffer order, are not spelled
    # out in the frame; an ANS stage's output is recognised by its config.
    ans_lanes = [struct.unpack_from("<I", config, 5)[0] for t, config in records
                 if t == ANS_TYPE and len(config) == 9]
    ans_lanes += [None for t, config in records if t == ANSI_TYPE and len(config) == 3]
    other = 0
    offset = header
    for k, size in enumerate(sizes):
        stream = data[offset:offset + size]
        offset += size
        if ans_lanes:
            try:
                head, lanes, codes = (ansi_fixed(stream) if ans_lanes[0] is None
                                      else ans_fixed(stream, ans_lanes[0]))
                print(f"| buffer {k} | {size} | code group | ANS of {codes} codes: head and tables {head}, "
                      f"lane records {lanes} |")
                ans_lanes.pop(0)
                continue
            except (ValueError, struct.error, IndexError):
                pass
        try:
            inner, table = rze_decode(stream)
            head, ends, codes = huffman_fixed(inner)
            print(f"| buffer {k} | {size} | code group | RZE table {table}; Huffman of {codes} codes "
                  f"({len(inner)} bytes before RZE): header and code lengths {head}, block ends {ends} |")
        except (ValueError, struct.error, IndexError):
            other += size
            print(f"| buffer {k} | {size} | other | side data (steps, anchors, outliers), a mask, or another chain |")
    print(f"\nheader {100.0 * header / len(data):.1f}% and other buffers {100.0 * other / len(data):.1f}% "
          f"of the frame: {100.0 * (header + other) / len(data):.1f}% before a single code")


def main():
    if len(sys.argv) < 2:
        print(__doc__.split("\n\n")[-2], file=sys.stderr)
        return 2
    for path in sys.argv[1:]:
        report(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
