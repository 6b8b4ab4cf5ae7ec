package dev.outbox.benchmarks.engineab;

import java.io.File;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Function;

/**
 * The engine alone, before and after a change, in one JVM: two revisions' outbox-core, each with its
 * {@link EngineOnlyDrain} compiled against it, in class loaders of their own, drained in alternation (A then B,
 * then B then A, ...) so that a machine whose speed drifts (other builds, a noisy neighbour) slows both alike.
 * Prints every round and the medians of the per-round ratios. Run by {@code ./bench.sh engine-ab}; see
 * docs/performance/index.md.
 */
public final class EngineAB {
    private EngineAB() {
    }

    /**
     * Runs the comparison.
     *
     * @param args records per drain, measured rounds, warm-up rounds, class path A, class path B (each
     *             {@code :}-separated: that revision's outbox-core classes and its compiled drain), and optionally
     *             the labels of A and B
     * @throws Exception if a class path cannot be loaded or a drain fails
     */
    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            throw new IllegalArgumentException("usage: EngineAB <records> <rounds> <warm-up rounds> <class path A>"
                    + " <class path B> [label A] [label B]");
        }
        int records = Integer.parseInt(args[0]);
        int rounds = Integer.parseInt(args[1]);
        int warm = Integer.parseInt(args[2]);
        Function<Integer, long[]> a = load(args[3]);
        Function<Integer, long[]> b = load(args[4]);
        String la = args.length > 5 ? args[5] : "A";
        String lb = args.length > 6 ? args[6] : "B";
        List<Double> rateRatio = new ArrayList<>();
        List<Double> cpuRatio = new ArrayList<>();
        List<Double> rateA = new ArrayList<>();
        List<Double> rateB = new ArrayList<>();
        List<Double> cpuA = new ArrayList<>();
        List<Double> cpuB = new ArrayList<>();
        for (int i = 0; i < warm + rounds; i++) {
            long[] x;
            long[] y;
            if (i % 2 == 0) {
                x = a.apply(records);
                y = b.apply(records);
            } else {
                y = b.apply(records);
                x = a.apply(records);
            }
            double ra = records / (x[0] / 1e9);
            double rb = records / (y[0] / 1e9);
            double ca = x[1] / 1e3 / records;
            double cb = y[1] / 1e3 / records;
            System.out.printf("%s %3d  %s %,10.0f records/s %6.2f us CPU/record   %s %,10.0f records/s %6.2f us"
                            + " CPU/record   %s/%s: rate %.3f, CPU %.3f%n", i < warm ? "warm-up" : "round  ", i,
                    la, ra, ca, lb, rb, cb, lb, la, rb / ra, cb / ca);
            if (i >= warm) {
                rateRatio.add(rb / ra);
                cpuRatio.add(cb / ca);
                rateA.add(ra);
                rateB.add(rb);
                cpuA.add(ca);
                cpuB.add(cb);
            }
        }
        System.out.printf("medians: %s %,.0f records/s, %.2f us CPU/record; %s %,.0f records/s, %.2f us CPU/record%n",
                la, median(rateA), median(cpuA), lb, median(rateB), median(cpuB));
        System.out.printf("median of the per-round ratios %s/%s: rate %.3f, CPU per record %.3f (%d rounds of %,d"
                + " records after %d warm-up rounds)%n", lb, la, median(rateRatio), median(cpuRatio), rounds, records,
                warm);
    }

    @SuppressWarnings("unchecked")
    private static Function<Integer, long[]> load(String classPath) throws ReflectiveOperationException,
            MalformedURLException {
        List<URL> urls = new ArrayList<>();
        for (String p : classPath.split(File.pathSeparator)) {
            urls.add(new File(p).toURI().toURL());
        }
        // Parent: this class's loader, for slf4j; outbox-core and the drain come from the revision's own path.
        ClassLoader loader = new URLClassLoader(urls.toArray(URL[]::new), EngineAB.class.getClassLoader()) {
            @Override
            protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
                if (name.startsWith("dev.outbox.")) {
                    synchronized (getClassLoadingLock(name)) {
                        Class<?> c = findLoadedClass(name);
                        if (c == null) {
                            c = findClass(name);
                        }
                        if (resolve) {
                            resolveClass(c);
                        }
                        return c;
                    }
                }
                return super.loadClass(name, resolve);
            }
        };
        return (Function<Integer, long[]>) loader.loadClass(EngineOnlyDrain.class.getName())
                .getDeclaredConstructor().newInstance();
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        int m = sorted.size() / 2;
        return sorted.size() % 2 == 1 ? sorted.get(m) : (sorted.get(m - 1) + sorted.get(m)) / 2;
    }
}
