package ipam_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/domain/ipam"
	"nimbus/app/kernel/objstore/s3test"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(s3test.Around(m)) }

// pool makes a pool of prefix in a fresh deployment's environment.
func pool(tb testing.TB, pg *pgxpool.Pool, prefix string) (uuid.UUID, dbtest.Deployment) {
	tb.Helper()
	d := dbtest.NewDeployment(tb, pg)
	p, err := db.Queries(pg).CreatePool(context.Background(), dbgen.CreatePoolParams{TenantID: uuid.NullUUID{UUID: d.TenantID, Valid: true}, EnvironmentID: uuid.NullUUID{UUID: d.EnvironmentID, Valid: true},
		Name: "p", Prefix: netip.MustParsePrefix(prefix), Reserved: []netip.Prefix{}})
	if err != nil {
		tb.Fatal(err)
	}
	return p.ID, d
}

// allocateConcurrently has clients goroutines ask for n addresses in all, each in its own
// transaction, and returns what they were given.
func allocateConcurrently(tb testing.TB, pg *pgxpool.Pool, poolID uuid.UUID, d dbtest.Deployment, clients, n int) ([]netip.Addr, time.Duration) {
	var (
		mu   sync.Mutex
		got  []netip.Addr
		wg   sync.WaitGroup
		next = make(chan int)
	)
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				var lease ipam.Lease
				err := db.Tx(context.Background(), pg, func(q *dbgen.Queries) error {
					var err error
					lease, err = ipam.Allocate(context.Background(), q, ipam.Request{PoolID: poolID, DeploymentID: d.DeploymentID,
						OperationID: d.OperationID, Input: fmt.Sprintf("nic-%d", i)})
					return err
				})
				if err != nil {
					tb.Error(err)
					continue
				}
				mu.Lock()
				got = append(got, lease.Address)
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return got, time.Since(start)
}

func duplicates(addrs []netip.Addr) int {
	seen := map[netip.Addr]bool{}
	dup := 0
	for _, a := range addrs {
		if seen[a] {
			dup++
		}
		seen[a] = true
	}
	return dup
}

func TestAllocate_ConcurrentClientsNeverShareAnAddress(t *testing.T) {
	pg := dbtest.Pool(t)
	poolID, d := pool(t, pg, "10.8.0.0/22")
	got, _ := allocateConcurrently(t, pg, poolID, d, 20, 200)
	if len(got) != 200 || duplicates(got) != 0 {
		t.Fatalf("%d addresses, %d of them duplicates", len(got), duplicates(got))
	}
	// Asking again for an input is asking once.
	var again ipam.Lease
	err := db.Tx(context.Background(), pg, func(q *dbgen.Queries) error {
		var err error
		again, err = ipam.Allocate(context.Background(), q, ipam.Request{PoolID: poolID, DeploymentID: d.DeploymentID, Input: "nic-7"})
		return err
	})
	if err != nil || !contains(got, again.Address) {
		t.Fatalf("asking again for nic-7: %v %v", again, err)
	}
	// The database refuses an overlap whatever the code does.
	_, err = db.Queries(pg).CreateAllocation(context.Background(), dbgen.CreateAllocationParams{PoolID: poolID,
		Prefix: netip.PrefixFrom(got[0], 32), Kind: "address", Input: "by-hand"})
	if !db.IsExclusionViolation(err) {
		t.Fatalf("a second allocation of %s: %v, want the exclusion constraint to refuse it", got[0], err)
	}
}

func TestAllocate_FullPoolSaysSo(t *testing.T) {
	pg := dbtest.Pool(t)
	poolID, d := pool(t, pg, "10.9.0.0/30") // .2 is the only address to hand out
	got, _ := allocateConcurrently(t, pg, poolID, d, 1, 1)
	if len(got) != 1 || got[0] != netip.MustParseAddr("10.9.0.2") {
		t.Fatalf("got %v", got)
	}
	err := db.Tx(context.Background(), pg, func(q *dbgen.Queries) error {
		_, err := ipam.Allocate(context.Background(), q, ipam.Request{PoolID: poolID, DeploymentID: d.DeploymentID, Input: "another"})
		return err
	})
	if !errors.Is(err, ipam.ErrFull) {
		t.Fatalf("the full pool answered %v", err)
	}
}

// An address asked for within a subnet comes from the subnet, with the subnet's gateway and
// prefix length; the subnet fills up on its own while the pool has room; a subnet given back
// leaves its addresses held, and no later subnet overlaps them.
func TestAllocate_WithinASubnet(t *testing.T) {
	pg := dbtest.Pool(t)
	poolID, d := pool(t, pg, "10.9.0.0/24")
	ctx := context.Background()
	allocate := func(r ipam.Request) (ipam.Lease, error) {
		var lease ipam.Lease
		err := db.Tx(ctx, pg, func(q *dbgen.Queries) error {
			var err error
			r.PoolID, r.DeploymentID = poolID, d.DeploymentID
			lease, err = ipam.Allocate(ctx, q, r)
			return err
		})
		return lease, err
	}
	subnet, err := allocate(ipam.Request{Bits: 30, Input: "ipam.subnet"})
	if err != nil || subnet.Prefix != netip.MustParsePrefix("10.9.0.0/30") {
		t.Fatalf("the subnet: %v (%v)", subnet, err)
	}
	var parent uuid.UUID
	if err := pg.QueryRow(ctx, `SELECT id FROM ipam_allocations WHERE kind = 'subnet'`).Scan(&parent); err != nil {
		t.Fatal(err)
	}
	// A /30 has one address besides its network, gateway and broadcast addresses.
	got, err := allocate(ipam.Request{Within: parent, Input: "nic-1"})
	want := ipam.Lease{Address: netip.MustParseAddr("10.9.0.2"), Prefix: netip.MustParsePrefix("10.9.0.0/30"), Gateway: netip.MustParseAddr("10.9.0.1")}
	if err != nil || got != want {
		t.Fatalf("within the subnet: %+v (%v), want %+v", got, err, want)
	}
	if again, err := allocate(ipam.Request{Within: parent, Input: "nic-1"}); err != nil || again != want {
		t.Fatalf("asked again: %+v (%v)", again, err)
	}
	if _, err := allocate(ipam.Request{Within: parent, Input: "nic-2"}); !errors.Is(err, ipam.ErrFull) {
		t.Fatalf("a full subnet of a roomy pool answered %v", err)
	}
	if _, err := pg.Exec(ctx, `DELETE FROM ipam_allocations WHERE id = $1`, parent); err != nil {
		t.Fatal(err)
	}
	if next, err := allocate(ipam.Request{Bits: 29, Input: "ipam.subnet.2"}); err != nil || next.Prefix != netip.MustParsePrefix("10.9.0.8/29") {
		t.Fatalf("a subnet after the first was given back, its address still held: %v (%v)", next.Prefix, err)
	}
}

// A machine moving to another subnet, or back to the pool, is handed an address there beside
// the one it has; asked again it gets the same. Its operation undone gives the new one back and
// leaves the old; succeeded, it gives the old one back, free for the next machine, and the
// machine holds the new one alone.
func TestAllocate_AMoveHoldsBothAddressesUntilItsOperationEnds(t *testing.T) {
	pg := dbtest.Pool(t)
	poolID, d := pool(t, pg, "10.9.0.0/24")
	ctx := context.Background()
	q := db.Queries(pg)
	allocate := func(r ipam.Request) ipam.Lease {
		t.Helper()
		var lease ipam.Lease
		err := db.Tx(ctx, pg, func(q *dbgen.Queries) error {
			var err error
			r.PoolID, r.DeploymentID = poolID, d.DeploymentID
			lease, err = ipam.Allocate(ctx, q, r)
			return err
		})
		if err != nil {
			t.Fatalf("allocate %+v: %v", r, err)
		}
		return lease
	}
	operation := func() uuid.UUID {
		t.Helper()
		var id uuid.UUID
		if err := pg.QueryRow(ctx, `INSERT INTO operations (deployment_id, kind) VALUES ($1, 'update') RETURNING id`, d.DeploymentID).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	held := func() []string {
		t.Helper()
		var out []string
		rows, err := q.DeploymentHoldings(ctx, dbgen.DeploymentHoldingsParams{DeploymentID: uuid.NullUUID{UUID: d.DeploymentID, Valid: true}, Input: "ipam"})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range rows {
			out = append(out, a.Prefix.Addr().String())
		}
		return out
	}
	subnet := func(prefix string) uuid.UUID {
		t.Helper()
		var id uuid.UUID
		if err := pg.QueryRow(ctx, `SELECT id FROM ipam_allocations WHERE prefix = $1`, prefix).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	allocate(ipam.Request{Bits: 26, Input: "ipam.subnet"})
	allocate(ipam.Request{Bits: 26, Input: "ipam.subnet.2"})
	a, b := subnet("10.9.0.0/26"), subnet("10.9.0.64/26")
	if got := allocate(ipam.Request{Within: a, Input: "ipam", OperationID: d.OperationID}); got.Address.String() != "10.9.0.2" {
		t.Fatalf("the machine's first address: %+v", got)
	}

	undone := operation()
	want := ipam.Lease{Address: netip.MustParseAddr("10.9.0.66"), Prefix: netip.MustParsePrefix("10.9.0.64/26"), Gateway: netip.MustParseAddr("10.9.0.65")}
	for range 2 { // a resumed resolve asks again
		if got := allocate(ipam.Request{Within: b, Input: "ipam", OperationID: undone}); got != want {
			t.Fatalf("moving to the second subnet: %+v, want %+v", got, want)
		}
	}
	if got := fmt.Sprint(held()); got != "[10.9.0.2 10.9.0.66]" {
		t.Fatalf("while the move runs the machine holds %s, want both addresses", got)
	}
	if _, err := q.ReleaseOperationAllocations(ctx, uuid.NullUUID{UUID: undone, Valid: true}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(held()); got != "[10.9.0.2]" {
		t.Fatalf("after the move was undone the machine holds %s, want its first address alone", got)
	}

	// A preview's move is the one its update goes on with; the preview ending leaves it held.
	preview, moved := operation(), operation()
	allocate(ipam.Request{Within: b, Input: "ipam", OperationID: preview})
	if got := allocate(ipam.Request{Within: b, Input: "ipam", OperationID: moved}); got != want {
		t.Fatalf("the update after its preview: %+v, want %+v", got, want)
	}
	if _, err := q.ReleaseReplacedAllocations(ctx, uuid.NullUUID{UUID: moved, Valid: true}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(held()); got != "[10.9.0.66]" {
		t.Fatalf("after the move succeeded the machine holds %s, want the new address alone", got)
	}
	if now, err := q.DeploymentAllocation(ctx, dbgen.DeploymentAllocationParams{DeploymentID: uuid.NullUUID{UUID: d.DeploymentID, Valid: true}, Input: "ipam"}); err != nil || now.Prefix.Addr() != want.Address {
		t.Fatalf("the address in use after the move: %v (%v)", now.Prefix, err)
	}
	if got := allocate(ipam.Request{Within: a, Input: "another-nic"}); got.Address.String() != "10.9.0.2" {
		t.Fatalf("the next machine joining the first subnet got %s, want the address the moved one gave back", got.Address)
	}

	// A move begun and abandoned (its preview never applied) is dropped by one going elsewhere.
	allocate(ipam.Request{Within: a, Input: "ipam", OperationID: operation()})
	home := operation()
	got := allocate(ipam.Request{Input: "ipam", OperationID: home})
	if got.Address.String() != "10.9.0.128" || got.Prefix != netip.MustParsePrefix("10.9.0.0/24") || got.Gateway.String() != "10.9.0.1" {
		t.Fatalf("moving back to the pool: %+v", got)
	}
	if _, err := q.ReleaseReplacedAllocations(ctx, uuid.NullUUID{UUID: home, Valid: true}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(held()); got != "[10.9.0.128]" {
		t.Fatalf("back in the pool the machine holds %s", got)
	}
}

func contains(addrs []netip.Addr, a netip.Addr) bool {
	for _, x := range addrs {
		if x == a {
			return true
		}
	}
	return false
}

// BenchmarkAllocate has 50 clients take 1,000 addresses from one pool, each in a transaction
// of its own, and reports the rate and the duplicates (which must be 0).
func BenchmarkAllocate(b *testing.B) {
	pg := dbtest.Pool(b)
	for range b.N {
		poolID, d := pool(b, pg, "10.16.0.0/20")
		got, took := allocateConcurrently(b, pg, poolID, d, 50, 1000)
		b.ReportMetric(float64(len(got))/took.Seconds(), "allocations/s")
		b.ReportMetric(float64(duplicates(got)), "duplicates")
		b.Logf("50 clients, %d allocations in %s: %.0f/s, %d duplicates", len(got), took.Round(time.Millisecond),
			float64(len(got))/took.Seconds(), duplicates(got))
	}
}
