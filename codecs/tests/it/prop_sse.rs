//! Properties of the SSE decoder.

use proptest::prelude::*;
use switchboard_codecs::sse::{SseCodec, SseFrame};

use crate::support::{chunk_sizes, decode_all};

fn decode(max: usize, input: &[u8], sizes: &[usize]) -> Vec<SseFrame> {
    decode_all(&mut SseCodec::with_max_event_size(max), input, sizes)
}

/// Bytes that look like an event stream often enough to exercise every field.
fn stream_noise() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        any::<u8>().prop_map(|b| vec![b]),
        "[a-z0-9 ]{0,12}".prop_map(String::into_bytes),
        prop::sample::select(vec![
            &b"\n"[..],
            b"\r\n",
            b"\r",
            b"\n\n",
            b":",
            b": comment",
            b"data:",
            b"data: ",
            b"id: ",
            b"id\0",
            b"event: ",
            b"retry: 15",
            b"\xEF\xBB\xBF",
            b"\xff",
        ])
        .prop_map(<[u8]>::to_vec),
    ];
    prop::collection::vec(token, 0..48).prop_map(|tokens| tokens.concat())
}

proptest! {
    /// The decoded sequence depends on the bytes only, not on where reads split them.
    #[test]
    fn prop_sse_decoding_is_independent_of_chunking(
        input in stream_noise(),
        max in 1..64usize,
        sizes in chunk_sizes(),
    ) {
        let whole = decode(max, &input, &[input.len().max(1)]);
        let split = decode(max, &input, &sizes);
        prop_assert_eq!(&whole, &split);
        let bytewise = decode(max, &input, &[1]);
        prop_assert_eq!(&whole, &bytewise);
    }

    /// Arbitrary bytes never panic, with the default limit too.
    #[test]
    fn prop_sse_arbitrary_bytes_never_panic(
        input in prop::collection::vec(any::<u8>(), 0..256),
        sizes in chunk_sizes(),
    ) {
        let frames = decode(switchboard_codecs::sse::DEFAULT_MAX_EVENT_SIZE, &input, &sizes);
        let blank_lines = input
            .windows(2)
            .filter(|w| matches!(w, [b'\n' | b'\r', b'\n' | b'\r']))
            .count();
        // Every event ends with a blank line, so there are at most as many as line endings.
        prop_assert!(frames.len() <= blank_lines + 1);
    }
}
