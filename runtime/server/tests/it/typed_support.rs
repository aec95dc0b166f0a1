//! A server of typed tools, a resource and a prompt (`Server::builder`): what the typed
//! tests serve, and a handshake for a line client.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use switchboard_server::{Context, PromptMessage, PromptReply, Server, ToolError};

use crate::support::LineClient;

/// Where an order goes.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct Address {
    /// The city.
    city: String,
    /// The postcode, if it has one.
    zip: Option<String>,
}

/// One line of an order.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct Item {
    /// What it is.
    name: String,
    /// How many.
    quantity: u32,
}

/// How fast an order ships.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Speed {
    Standard,
    Express,
}

/// An order.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct Order {
    /// Who orders.
    customer: String,
    /// What they order.
    items: Vec<Item>,
    /// Where it goes.
    address: Address,
    /// How fast; standard if not said.
    speed: Option<Speed>,
    /// A note for the packer.
    #[serde(default)]
    note: String,
}

async fn order(order: Order) -> Result<String, ToolError> {
    let count: u32 = order.items.iter().map(|item| item.quantity).sum();
    let names: Vec<&str> = order.items.iter().map(|item| item.name.as_str()).collect();
    let speed = match order.speed {
        Some(Speed::Express) => "express",
        Some(Speed::Standard) | None => "standard",
    };
    Ok(format!(
        "{count} ({}) for {} to {} {}, {speed}{}",
        names.join(", "),
        order.customer,
        order.address.city,
        order.address.zip.as_deref().unwrap_or("-"),
        if order.note.is_empty() { "" } else { ", noted" },
    ))
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct File {
    path: String,
}

/// Asks the client who is there (an elicitation): the `Context` as a second argument.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct Greeting {
    /// The greeting.
    word: String,
}

async fn greet(greeting: Greeting, ctx: Context) -> Result<String, ToolError> {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    let answer = ctx
        .input(
            "who",
            "elicitation/create",
            json!({"message": "who is there?", "requestedSchema": schema}),
        )
        .await?;
    let name = answer["content"]["name"].as_str().unwrap_or("nobody");
    Ok(format!("{}, {name}!", greeting.word))
}

/// Whose complaint.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct Complaint {
    /// What went wrong.
    problem: String,
    /// Who complains, if they say.
    customer: Option<String>,
}

async fn complain(complaint: Complaint) -> Result<PromptReply, ToolError> {
    let who = complaint.customer.as_deref().unwrap_or("A customer");
    Ok(PromptReply::new([
        PromptMessage::user(format!("{who} says: {}", complaint.problem)),
        PromptMessage::assistant("I am sorry to hear it."),
    ])
    .with_description("a complaint"))
}

/// The typed fixture: tools `order` (nested, optional, enum and list arguments), `sold_out`
/// (fails), `read` (an io error with `?`), `greet` (asks the client), `now` (no
/// arguments); resource `shop://catalogue`; prompt `complain`.
pub(crate) fn typed_server() -> Server {
    Server::builder("shop", "2.0.0")
        .with_title("The shop")
        .tool("order", "Places an order", order)
        .tool("sold_out", "Always fails", |_: File| async {
            Err::<String, _>(ToolError::new("sold out"))
        })
        .tool("read", "Reads a file", |file: File| async move {
            Ok(std::fs::read_to_string(file.path)?)
        })
        .tool("greet", "Greets whoever is there", greet)
        .tool("now", "The time", || async { Ok("noon") })
        .resource("shop://catalogue", "catalogue", || async {
            Ok("apples, pears")
        })
        .prompt("complain", "A customer's complaint", complain)
        .build()
        .expect("the fixture can be served")
}

/// A line client of the typed server, initialized at `version`.
pub(crate) async fn handshake(version: &str) -> LineClient {
    let mut client = LineClient::start(typed_server());
    let init = client
        .request(
            0,
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], version, "{init}");
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    client
}

/// The tool called `name` in a `tools/list` response.
pub(crate) fn tool<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["result"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|tool| tool["name"] == name))
        .unwrap_or_else(|| panic!("no tool {name} in {list}"))
}

/// A good order's arguments.
pub(crate) fn good_order() -> Value {
    json!({
        "customer": "Ada",
        "items": [{"name": "apples", "quantity": 2}, {"name": "pears", "quantity": 1}],
        "address": {"city": "Paris"},
        "speed": "express",
    })
}
