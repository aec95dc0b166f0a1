//! One server's tools, analysed for search: its postings and field lengths, built once per
//! tool list and reused by every catalogue snapshot in which that server's list is the same.
//!
//! A catalogue's index is its servers' segments side by side (see [`super::Index`]): when one
//! server relists, only its segment is built again; the statistics that span servers
//! (document count, average field lengths, document frequencies) are sums over segments,
//! taken when the index is assembled or when a query looks a term up.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use switchboard_codecs::mcp::Tool;

use super::analyse::Analyser;

/// The fields of a tool document, in [`Field`] order.
pub(crate) const FIELDS: usize = 6;

/// A field of a tool document.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Field {
    Name = 0,
    Title = 1,
    Description = 2,
    /// The input schema's property names (nested ones too) and allowed string values.
    Parameters = 3,
    /// The input schema's property descriptions.
    ParameterDescriptions = 4,
    /// The name of the server offering the tool.
    Server = 5,
}

/// How deep the input schema's nested properties are read (objects in objects, items of
/// arrays).
const SCHEMA_DEPTH: usize = 4;

/// A term's occurrences in one document, by field.
#[derive(Debug, Clone)]
pub(crate) struct Posting {
    /// The document: the server's tool at this place in the segment.
    pub(crate) doc: u32,
    pub(crate) tf: [u16; FIELDS],
}

/// One server's tools, analysed.
#[derive(Debug)]
pub(crate) struct Segment {
    /// The list it was built from, held so that its address cannot be reused while the
    /// segment is cached; `None` when the catalogue did not say where its tools came from.
    source: Option<Arc<[Tool]>>,
    /// The original names of its documents, in catalogue order.
    names: Vec<String>,
    pub(crate) postings: HashMap<Box<str>, Vec<Posting>>,
    /// Each document's length (terms) by field.
    pub(crate) lengths: Vec<[u16; FIELDS]>,
    /// The sum of `lengths` by field.
    pub(crate) total_lengths: [u64; FIELDS],
}

impl Segment {
    /// Analyses `tools` of `server`.
    pub(crate) fn build<'a>(
        server: &str,
        tools: impl IntoIterator<Item = &'a Tool>,
        source: Option<Arc<[Tool]>>,
    ) -> Segment {
        let mut analyser = Analyser::default();
        let mut server_terms = Vec::new();
        analyser.terms_into(server, &mut server_terms);
        let mut segment = Segment {
            source,
            names: Vec::new(),
            postings: HashMap::new(),
            lengths: Vec::new(),
            total_lengths: [0; FIELDS],
        };
        let mut fields: [Vec<String>; FIELDS] = Default::default();
        for (doc, tool) in tools.into_iter().enumerate() {
            for field in &mut fields {
                field.clear();
            }
            analyser.terms_into(&tool.name, &mut fields[Field::Name as usize]);
            if let Some(title) = &tool.title {
                analyser.terms_into(title, &mut fields[Field::Title as usize]);
            }
            if let Some(description) = &tool.description {
                analyser.terms_into(description, &mut fields[Field::Description as usize]);
            }
            let mut names = std::mem::take(&mut fields[Field::Parameters as usize]);
            let mut descriptions =
                std::mem::take(&mut fields[Field::ParameterDescriptions as usize]);
            schema_terms(
                &mut analyser,
                &tool.input_schema,
                SCHEMA_DEPTH,
                &mut names,
                &mut descriptions,
            );
            fields[Field::Parameters as usize] = names;
            fields[Field::ParameterDescriptions as usize] = descriptions;
            fields[Field::Server as usize].extend(server_terms.iter().cloned());

            let mut counts: HashMap<&str, [u16; FIELDS]> = HashMap::new();
            let mut lengths = [0u16; FIELDS];
            for (f, terms) in fields.iter().enumerate() {
                lengths[f] = saturate(terms.len());
                for term in terms {
                    let tf = counts.entry(term.as_str()).or_default();
                    tf[f] = tf[f].saturating_add(1);
                }
            }
            for (term, tf) in counts.drain() {
                let doc = u32::try_from(doc).unwrap_or(u32::MAX);
                match segment.postings.get_mut(term) {
                    Some(list) => list.push(Posting { doc, tf }),
                    None => {
                        segment
                            .postings
                            .insert(term.into(), vec![Posting { doc, tf }]);
                    }
                }
            }
            for (total, len) in segment.total_lengths.iter_mut().zip(lengths) {
                *total += u64::from(len);
            }
            segment.lengths.push(lengths);
            segment.names.push(tool.name.clone());
        }
        segment
    }

    /// Whether it was built from exactly this list and these of its tools, by name.
    fn built_from<'a>(
        &self,
        source: &Arc<[Tool]>,
        names: impl ExactSizeIterator<Item = &'a str>,
    ) -> bool {
        self.source.as_ref().is_some_and(|s| Arc::ptr_eq(s, source))
            && self.names.len() == names.len()
            && self.names.iter().map(String::as_str).eq(names)
    }
}

/// The segments last built for each server, shared by the catalogue snapshots of one
/// runtime (or one [`CatalogueBuilder`](crate::CatalogueBuilder)).
#[derive(Debug, Default)]
pub(crate) struct SegmentCache {
    segments: Mutex<HashMap<Arc<str>, Arc<Segment>>>,
}

impl SegmentCache {
    /// The segment of `server`'s `tools`, taken from the list `source`: the cached one when
    /// it was built from the same list and the same of its tools, else a new one, cached
    /// in its place.
    pub(crate) fn segment(
        &self,
        server: &Arc<str>,
        source: &Arc<[Tool]>,
        tools: &[&Tool],
    ) -> Arc<Segment> {
        let names = || tools.iter().map(|t| t.name.as_str());
        if let Some(found) = self.lock().get(server) {
            if found.built_from(source, names()) {
                return Arc::clone(found);
            }
        }
        // Built outside the lock: another server's segment may be built meanwhile.
        let built = Arc::new(Segment::build(
            server,
            tools.iter().copied(),
            Some(Arc::clone(source)),
        ));
        self.lock().insert(Arc::clone(server), Arc::clone(&built));
        built
    }

    /// Forgets the servers not in `keep`.
    pub(crate) fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.lock().retain(|server, _| keep(server));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Arc<Segment>>> {
        // A panic while the map was held cannot leave it half-changed: each change is one
        // insert or retain.
        self.segments.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The names, allowed string values (`enum`) and descriptions of the properties of a JSON
/// schema, nested ones too (down to `depth` levels, through `properties` and array `items`).
fn schema_terms(
    analyser: &mut Analyser,
    schema: &Value,
    depth: usize,
    names: &mut Vec<String>,
    descriptions: &mut Vec<String>,
) {
    if depth == 0 {
        return;
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        analyser.terms_into(name, names);
        enum_terms(analyser, property, names);
        if let Some(description) = property.get("description").and_then(Value::as_str) {
            analyser.terms_into(description, descriptions);
        }
        schema_terms(analyser, property, depth - 1, names, descriptions);
        if let Some(items) = property.get("items") {
            enum_terms(analyser, items, names);
            schema_terms(analyser, items, depth - 1, names, descriptions);
        }
    }
}

/// The string values a schema's `enum` allows (`"state": {"enum": ["open", "closed"]}`):
/// they name what a tool can do as much as a property's name does.
fn enum_terms(analyser: &mut Analyser, schema: &Value, out: &mut Vec<String>) {
    let values = schema.get("enum").and_then(Value::as_array);
    for value in values.into_iter().flatten().filter_map(Value::as_str) {
        analyser.terms_into(value, out);
    }
}

fn saturate(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}
