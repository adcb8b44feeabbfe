// Compresses files as SeaTunnel's LocalFileIT lays out its lzo inputs: with aircompressor's
// LzopCodec (LZO1X-1 blocks), here the one SeaTunnel's file connector ships.
// Usage: WriteLzop SOURCE TARGET [SOURCE TARGET ...]  (bench/seatunnel_differential.py)
import io.airlift.compress.lzo.LzopCodec;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Paths;

public class WriteLzop {
    public static void main(String[] args) throws IOException {
        for (int i = 0; i + 1 < args.length; i += 2) {
            byte[] data = Files.readAllBytes(Paths.get(args[i]));
            try (OutputStream out = new LzopCodec().createOutputStream(Files.newOutputStream(Paths.get(args[i + 1])))) {
                out.write(data);
            }
        }
    }
}
