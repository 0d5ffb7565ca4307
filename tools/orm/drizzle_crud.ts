// drizzle-orm against iasql with the schema drizzle-kit pull wrote
// (internal/ormtest runs it): npx tsx drizzle_crud.ts DIR PHASE, with the
// database in PGHOST, PGPORT, PGUSER and PGDATABASE (libpq's variables,
// which node-postgres reads too). DIR holds the pulled schema.ts.
//   create  inserts a bucket and a security group (only the columns a user
//           sets) and a rule, then CALL iasql_commit()
//   update  in one iasql transaction on one pooled connection (pool.connect()):
//           iasql_begin, versioning on, the group's tags, iasql_commit
//   delete  deletes the rule, the group and the bucket, then commits
// Each phase prints one line; a failure exits 1.
import { eq, sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";

const [dir, phase] = process.argv.slice(2);
const NAME = "orm-drizzle";
const schema = await import(`${dir}/schema.ts`);
const { bucket, securityGroup, securityGroupRule } = schema;

const pool = new pg.Pool({ max: 4 });
try {
  const db = drizzle(pool);
  if (phase === "create") {
    await db.insert(bucket).values({ name: NAME });
    const [g] = await db.insert(securityGroup).values({ groupName: NAME, description: "made by drizzle" }).returning();
    await db.insert(securityGroupRule).values({ securityGroupId: g.id, ipProtocol: "tcp", fromPort: 80, toPort: 80, cidrIpv4: "0.0.0.0/0" });
    await db.execute(sql`CALL iasql_commit()`);
    console.log("create: committed");
  } else if (phase === "update") {
    // An iasql transaction belongs to the session that began it: one
    // client of the pool for all of it.
    const client = await pool.connect();
    try {
      const tx = drizzle(client);
      await tx.execute(sql`CALL iasql_begin()`);
      await tx.update(bucket).set({ versioning: true }).where(eq(bucket.name, NAME));
      await tx.update(securityGroup).set({ tags: { "made-by": "drizzle", team: "web" } }).where(eq(securityGroup.groupName, NAME));
      await tx.execute(sql`CALL iasql_commit()`);
    } finally {
      client.release();
    }
    console.log("update: committed");
  } else if (phase === "delete") {
    const [g] = await db.select().from(securityGroup).where(eq(securityGroup.groupName, NAME));
    await db.delete(securityGroupRule).where(eq(securityGroupRule.securityGroupId, g.id));
    await db.delete(securityGroup).where(eq(securityGroup.id, g.id));
    await db.delete(bucket).where(eq(bucket.name, NAME));
    await db.execute(sql`CALL iasql_commit()`);
    console.log("delete: committed");
  } else {
    throw new Error(`unknown phase ${phase}: create, update or delete`);
  }
} finally {
  await pool.end();
}
