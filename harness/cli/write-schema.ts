/** npm run schema: writes workloads/protocol.schema.json from the protocol's zod definitions. */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { protocolJsonSchemaText } from '../workload/protocol-json-schema.js';

const file = path.resolve(import.meta.dirname, '..', '..', '..', 'workloads', 'protocol.schema.json');
writeFileSync(file, protocolJsonSchemaText());
console.log(`wrote ${file}`);
