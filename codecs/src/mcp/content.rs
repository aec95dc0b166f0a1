//! Content blocks of tool results, tagged by `type`, tolerant of block types this version
//! does not know.
//!
//! Split out of [`mcp`](super) for size; everything here is re-exported there.

use std::fmt;

use serde::de::value::SeqAccessDeserializer;
use serde::de::{self, DeserializeOwned, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A content block of a tool result or a sampling message, tagged by `type` on the wire.
///
/// A block whose `type` is unknown, or whose fields do not fit its `type`, is kept as
/// [`Content::Unknown`] rather than failing the whole result, and serialized back unchanged.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Content {
    /// `"text"`.
    Text(TextContent),
    /// `"image"`.
    Image(ImageContent),
    /// `"audio"` (2025-03-26).
    Audio(AudioContent),
    /// `"resource_link"` (2025-06-18).
    ResourceLink(ResourceLink),
    /// `"resource"`: an embedded resource.
    Resource(EmbeddedResource),
    /// `"tool_use"`: a model asks for a tool call (sampling messages, 2025-11-25).
    ToolUse(ToolUseContent),
    /// `"tool_result"`: the result of a tool use (sampling messages, 2025-11-25).
    ToolResult(ToolResultContent),
    /// Any other block, raw (including its `type`).
    Unknown(Value),
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(TextContent {
            text: text.into(),
            ..Default::default()
        })
    }

    fn from_value(value: Value) -> Content {
        let parsed = match value.get("type").and_then(Value::as_str) {
            Some("text") => parse_block(&value).map(Content::Text),
            Some("image") => parse_block(&value).map(Content::Image),
            Some("audio") => parse_block(&value).map(Content::Audio),
            Some("resource_link") => parse_block(&value).map(Content::ResourceLink),
            Some("resource") => parse_block(&value).map(Content::Resource),
            Some("tool_use") => parse_block(&value).map(Content::ToolUse),
            Some("tool_result") => parse_block(&value).map(Content::ToolResult),
            _ => None,
        };
        parsed.unwrap_or(Content::Unknown(value))
    }
}

/// Reads a block's fields, consuming `type` so that it does not land in the block's `extra`.
fn parse_block<T: DeserializeOwned>(value: &Value) -> Option<T> {
    #[derive(Deserialize)]
    struct Tagged<T> {
        #[serde(rename = "type")]
        _kind: IgnoredAny,
        #[serde(flatten)]
        block: T,
    }
    Tagged::<T>::deserialize(value).ok().map(|t| t.block)
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tagged<'a, T> {
            #[serde(rename = "type")]
            kind: &'static str,
            #[serde(flatten)]
            block: &'a T,
        }
        match self {
            Content::Text(block) => Tagged {
                kind: "text",
                block,
            }
            .serialize(s),
            Content::Image(block) => Tagged {
                kind: "image",
                block,
            }
            .serialize(s),
            Content::Audio(block) => Tagged {
                kind: "audio",
                block,
            }
            .serialize(s),
            Content::ResourceLink(block) => Tagged {
                kind: "resource_link",
                block,
            }
            .serialize(s),
            Content::Resource(block) => Tagged {
                kind: "resource",
                block,
            }
            .serialize(s),
            Content::ToolUse(block) => Tagged {
                kind: "tool_use",
                block,
            }
            .serialize(s),
            Content::ToolResult(block) => Tagged {
                kind: "tool_result",
                block,
            }
            .serialize(s),
            Content::Unknown(value) => value.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ContentVisitor)
    }
}

/// Reads a content block. A text block whose `type` comes first (what every SDK writes) is
/// read straight into [`TextContent`]; anything else goes through a `Value` and
/// [`Content::from_value`]. Both roads give the same block: a text block read directly would
/// have read the same through the `Value`.
struct ContentVisitor;

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = Content;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content block")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Content, A::Error> {
        let mut fields = Map::new();
        match map.next_key::<BlockKey>()? {
            None => return Ok(Content::Unknown(Value::Object(fields))),
            Some(BlockKey::Type) => {
                let kind: Value = map.next_value()?;
                if kind.as_str() == Some("text") {
                    return text_block(map);
                }
                fields.insert("type".to_owned(), kind);
            }
            Some(key) => {
                fields.insert(key.into_name(), map.next_value()?);
            }
        }
        rest_of_block(fields, map)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Content, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(Content::Unknown)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Content, E> {
        Ok(Content::Unknown(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Content, E> {
        Ok(Content::Unknown(Value::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Content, E> {
        Ok(Content::Unknown(Value::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Content, E> {
        Ok(Content::Unknown(Value::from(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Content, E> {
        Ok(Content::Unknown(Value::String(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Content, E> {
        Ok(Content::Unknown(Value::String(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Content, E> {
        Ok(Content::Unknown(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<Content, E> {
        Ok(Content::Unknown(Value::Null))
    }
}

/// The rest of a block that is not read directly: every field into `fields` (a repeated
/// key keeps its last value, as in a `Value`), then the block by its `type`.
fn rest_of_block<'de, A: MapAccess<'de>>(
    mut fields: Map<String, Value>,
    mut map: A,
) -> Result<Content, A::Error> {
    while let Some(key) = map.next_key::<BlockKey>()? {
        fields.insert(key.into_name(), map.next_value()?);
    }
    Ok(Content::from_value(Value::Object(fields)))
}

/// A text block after its `"type": "text"`.
fn text_block<'de, A: MapAccess<'de>>(mut map: A) -> Result<Content, A::Error> {
    let mut text: Option<Value> = None;
    let mut annotations: Option<Value> = None;
    let mut meta: Option<Value> = None;
    let mut extra = Map::new();
    while let Some(key) = map.next_key::<BlockKey>()? {
        match key {
            BlockKey::Text => text = Some(map.next_value()?),
            BlockKey::Annotations => annotations = Some(map.next_value()?),
            BlockKey::Meta => meta = Some(map.next_value()?),
            BlockKey::Other(name) => {
                extra.insert(name, map.next_value()?);
            }
            // A second `type` may change what the block is: read it the general way.
            BlockKey::Type => {
                let mut fields = extra;
                fields.insert("type".to_owned(), map.next_value()?);
                for (name, value) in [
                    ("text", text),
                    ("annotations", annotations),
                    ("_meta", meta),
                ] {
                    if let Some(value) = value {
                        fields.entry(name).or_insert(value);
                    }
                }
                return rest_of_block(fields, map);
            }
        }
    }
    let parsed_annotations = match &annotations {
        None | Some(Value::Null) => Some(None),
        Some(value) => Annotations::deserialize(value).ok().map(Some),
    };
    let meta_fits = matches!(meta, None | Some(Value::Null | Value::Object(_)));
    match (text, parsed_annotations) {
        (Some(Value::String(text)), Some(annotations)) if meta_fits => {
            let meta = match meta {
                Some(Value::Object(meta)) => Some(meta),
                _ => None,
            };
            Ok(Content::Text(TextContent {
                text,
                annotations,
                meta,
                extra,
            }))
        }
        // Fields that do not fit a text block: kept raw, as `from_value` would.
        (text, _) => {
            let mut fields = extra;
            fields.insert("type".to_owned(), Value::String("text".to_owned()));
            for (name, value) in [
                ("text", text),
                ("annotations", annotations),
                ("_meta", meta),
            ] {
                if let Some(value) = value {
                    fields.insert(name.to_owned(), value);
                }
            }
            Ok(Content::Unknown(Value::Object(fields)))
        }
    }
}

/// A key of a content block, read without allocating for the ones a text block knows.
enum BlockKey {
    Type,
    Text,
    Annotations,
    Meta,
    Other(String),
}

impl BlockKey {
    fn into_name(self) -> String {
        match self {
            BlockKey::Type => "type".to_owned(),
            BlockKey::Text => "text".to_owned(),
            BlockKey::Annotations => "annotations".to_owned(),
            BlockKey::Meta => "_meta".to_owned(),
            BlockKey::Other(name) => name,
        }
    }
}

impl<'de> Deserialize<'de> for BlockKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = BlockKey;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<BlockKey, E> {
                Ok(match v {
                    "type" => BlockKey::Type,
                    "text" => BlockKey::Text,
                    "annotations" => BlockKey::Annotations,
                    "_meta" => BlockKey::Meta,
                    other => BlockKey::Other(other.to_owned()),
                })
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<BlockKey, E> {
                match v.as_str() {
                    "type" | "text" | "annotations" | "_meta" => self.visit_str(&v),
                    _ => Ok(BlockKey::Other(v)),
                }
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

/// Hints about a content block's audience and importance.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who it is for: `"user"`, `"assistant"`. Kept as strings so that a new role does not
    /// make the block unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<String>>,
    /// Importance, from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When it last changed, ISO 8601.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Text content.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Audience and priority hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An image, base64-encoded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// The base64 data.
    pub data: String,
    /// Its MIME type, e.g. `image/png`.
    pub mime_type: String,
    /// Audience and priority hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Audio, base64-encoded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// The base64 data.
    pub data: String,
    /// Its MIME type, e.g. `audio/wav`.
    pub mime_type: String,
    /// Audience and priority hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A link to a resource the client may read, not its contents.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its programmatic name.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons, raw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// Audience and priority hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A resource's contents, embedded in a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    /// The contents.
    pub resource: ResourceContents,
    /// Audience and priority hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A model's request to call a tool, in a sampling message (2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolUseContent {
    /// Unique id of this tool use; a [`ToolResultContent`] answers it by this id.
    pub id: String,
    /// The tool to call.
    pub name: String,
    /// The arguments, conforming to the tool's input schema.
    pub input: Map<String, Value>,
    /// Protocol metadata (clients should keep it in later requests).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of a tool use, in a sampling message (2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// The [`ToolUseContent::id`] this answers.
    pub tool_use_id: String,
    /// The result's content blocks, as in a tool call result.
    pub content: Vec<Content>,
    /// Structured result, when the tool has an output schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Map<String, Value>>,
    /// Whether the tool use failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A resource's contents: text or binary, told apart by which field is present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text contents (`text`).
    Text(TextResourceContents),
    /// Binary contents (`blob`, base64).
    Blob(BlobResourceContents),
}

/// Text contents of a resource.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Binary contents of a resource.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The base64 data.
    pub blob: String,
    /// Protocol metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version does not know, kept for round-trips.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_content_round_trips() {
        for block in [
            json!({"type": "future_thing", "x": 1}),
            json!({"type": "text"}),
            json!({"type": 5, "text": "x"}),
            json!({"text": "no type"}),
            json!("just a string"),
        ] {
            let c: Content = serde_json::from_value(block.clone()).unwrap();
            assert_eq!(serde_json::to_value(&c).unwrap(), block);
            assert_eq!(c, Content::Unknown(block));
        }
    }

    /// The direct reader of text blocks agrees with the general one (`Value`, then
    /// `from_value`) on every shape of block, read from text and from a `Value`.
    #[test]
    fn the_direct_text_reader_reads_what_the_general_one_does() {
        let blocks = [
            r#"{"type":"text","text":"hi"}"#,
            r#"{"type":"text","text":"hi","extra":[1,2],"more":{"a":null}}"#,
            r#"{"type":"text","text":"a\"b\u00e9","annotations":{"audience":["user"],"priority":0.5,"x":1}}"#,
            r#"{"type":"text","text":"hi","annotations":null,"_meta":null}"#,
            r#"{"type":"text","text":"hi","_meta":{"k":"v"}}"#,
            r#"{"type":"text","text":"hi","_meta":5}"#,
            r#"{"type":"text","text":"hi","annotations":{"priority":"high"}}"#,
            r#"{"type":"text","text":5}"#,
            r#"{"type":"text"}"#,
            r#"{"type":"text","text":"first","text":"last"}"#,
            r#"{"type":"text","text":"x","type":"image","data":"AA==","mimeType":"image/png"}"#,
            r#"{"type":"text","text":"x","type":"unknown"}"#,
            r#"{"text":"type second","type":"text"}"#,
            r#"{"type":"image","data":"AA==","mimeType":"image/png"}"#,
            r#"{"type":null}"#,
            r#"{}"#,
            r#"[1,{"type":"text","text":"x"}]"#,
            r#""a string""#,
            r#"3.5"#,
            r#"-7"#,
            r#"true"#,
            r#"null"#,
        ];
        for block in blocks {
            let value: Value = serde_json::from_str(block).unwrap();
            let general = Content::from_value(value.clone());
            let direct: Content = serde_json::from_str(block).unwrap();
            assert_eq!(direct, general, "from text: {block}");
            let from_value: Content = serde_json::from_value(value).unwrap();
            assert_eq!(from_value, general, "from a Value: {block}");
        }
    }

    #[test]
    fn tool_use_and_tool_result_round_trip() {
        let use_ = json!({"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}});
        let c: Content = serde_json::from_value(use_.clone()).unwrap();
        let Content::ToolUse(u) = &c else {
            panic!("{c:?}")
        };
        assert_eq!((u.id.as_str(), u.name.as_str()), ("c1", "get_weather"));
        assert_eq!(serde_json::to_value(&c).unwrap(), use_);

        let result = json!({"type": "tool_result", "toolUseId": "c1",
            "content": [{"type": "text", "text": "18C"}], "isError": false});
        let c: Content = serde_json::from_value(result.clone()).unwrap();
        let Content::ToolResult(r) = &c else {
            panic!("{c:?}")
        };
        assert_eq!(r.tool_use_id, "c1");
        assert_eq!(r.content, vec![Content::text("18C")]);
        assert_eq!(serde_json::to_value(&c).unwrap(), result);
    }
}
