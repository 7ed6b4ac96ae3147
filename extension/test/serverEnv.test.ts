/** The team-server settings become the bridge's environment; without a URL nothing changes. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { serverEnv } from "../src/core/serverEnv";

describe("serverEnv", () => {
  it("passes nothing when no server is set", () => {
    assert.deepEqual(serverEnv({ serverTokenFile: "/t", serverNamespace: "ns" }, "/home/dev"), {});
    assert.deepEqual(serverEnv({ serverUrl: "  " }, "/home/dev"), {});
  });

  it("passes the URL, the token file (home expanded) and the namespace", () => {
    assert.deepEqual(
      serverEnv({ serverUrl: " https://memory.example.com ", serverTokenFile: "~/.config/flowbaby/team.token", serverNamespace: "payments" }, "/home/dev"),
      {
        FLOWBABY_SERVER_URL: "https://memory.example.com",
        FLOWBABY_SERVER_TOKEN_FILE: "/home/dev/.config/flowbaby/team.token",
        FLOWBABY_SERVER_NAMESPACE: "payments",
      },
    );
  });
});
