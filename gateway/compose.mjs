// Compose subgraphs with both real composers (the Guild's, which `kernelindex supergraph` and
// `serve` use, and Apollo's, as a second opinion).
// stdin: a JSON list of {"name", "url", "sdl"}. stdout: a JSON report with the Guild's
// supergraph SDL. Exit 1 when either composer reports an error.
import { readFileSync } from "node:fs";
import { parse } from "graphql";
import { composeServices as composeWithGuild } from "@theguild/federation-composition";
import { composeServices as composeWithApollo } from "@apollo/composition";

const input = JSON.parse(readFileSync(0, "utf8"));
const services = input.map(({ name, url, sdl }) => ({ name, url, typeDefs: parse(sdl) }));
const only = process.argv[2]; // "guild": skip Apollo (start-up needs one composer only)

const messages = (errors) => (errors ?? []).map((e) => e.message);
const guild = composeWithGuild(services);
const apollo = only === "guild" ? { errors: [] } : composeWithApollo(services);
const report = {
  guild: { errors: messages(guild.errors), ok: !guild.errors?.length },
  apollo: { errors: messages(apollo.errors), ok: !apollo.errors?.length, skipped: only === "guild" },
  supergraphSdl: guild.supergraphSdl ?? null,
};
console.log(JSON.stringify(report));
process.exit(report.guild.ok && report.apollo.ok ? 0 : 1);
